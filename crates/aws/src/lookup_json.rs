//! Matching a batched read's results to the resources a refresh asked for.

use engine::{Attrs, Live, ReadRequest, TAG_ADDRESS};
use serde_json::Value as Json;

/// The `engine:address` tag of a live resource, if it has one.
pub(crate) fn address_tag(live: &Live) -> Option<&str> {
    live.attributes.get("tags").and_then(|t| t.get(TAG_ADDRESS)).and_then(Json::as_str)
}

/// A resource found by the name the spec gives it counts as ours only when it is recorded in
/// state or carries this request's address tag: a same-named resource someone else made is not
/// adopted (its create then fails with the cloud's "already exists").
pub(crate) fn ours_by_name(request: &ReadRequest, found: Option<Live>) -> Option<Live> {
    found.filter(|l| request.id.is_some() || address_tag(l) == Some(request.address.as_str()))
}

/// A resource without tags, found by the name the spec gives it, is ours only when recorded in
/// state or when it already has the value the spec wants for `field` (nothing to take over).
pub(crate) fn ours_by_value(
    request: &ReadRequest,
    found: Option<Live>,
    field: &str,
) -> Option<Live> {
    let wanted = request.desired.as_ref().and_then(|d| d.get(field));
    found
        .filter(|l| request.id.is_some() || (wanted.is_some() && l.attributes.get(field) == wanted))
}

/// A string attribute the spec gives a request.
pub(crate) fn desired_str(request: &ReadRequest, field: &str) -> Option<String> {
    request.desired.as_ref().and_then(|d| d.get(field)).and_then(Json::as_str).map(str::to_string)
}

/// The name a request is about: from the spec, else the recorded id.
pub(crate) fn wanted_name(request: &ReadRequest, field: &str) -> Option<String> {
    desired_str(request, field).or_else(|| request.id.clone())
}

/// Reads the requests concurrently, each by the key `key_of` gives it (none: absent).
pub(crate) async fn read_each<K, F, Fut>(
    requests: &[ReadRequest],
    key_of: impl Fn(&ReadRequest) -> Option<K>,
    read: F,
) -> Result<Vec<Option<Live>>, engine::KindError>
where
    F: Fn(K) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Live>, engine::KindError>>,
{
    futures::future::try_join_all(requests.iter().map(|r| {
        let found = key_of(r).map(&read);
        async move {
            match found {
                Some(f) => f.await,
                None => Ok(None),
            }
        }
    }))
    .await
}

/// Reads resources the spec names, each by the key `key_of` gives it; what is found counts
/// only as [`ours_by_name`] says.
pub(crate) async fn read_by_key<K, F, Fut>(
    requests: &[ReadRequest],
    key_of: impl Fn(&ReadRequest) -> Option<K>,
    read: F,
) -> Result<Vec<Option<Live>>, engine::KindError>
where
    F: Fn(K) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Live>, engine::KindError>>,
{
    let found = read_each(requests, key_of, read).await?;
    Ok(requests.iter().zip(found).map(|(r, l)| ours_by_name(r, l)).collect())
}

/// [`read_by_key`] by the name in `field` (else the recorded id).
pub(crate) async fn read_by_name<F, Fut>(
    requests: &[ReadRequest],
    field: &str,
    read: F,
) -> Result<Vec<Option<Live>>, engine::KindError>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Live>, engine::KindError>>,
{
    read_by_key(requests, |r| wanted_name(r, field), read).await
}

/// For each request, the found resource with its recorded id, else the one carrying its
/// address tag (a resource created by a run that died before writing state).
pub(crate) fn match_requests(requests: &[ReadRequest], found: &[Live]) -> Vec<Option<Live>> {
    requests.iter().map(|r| match_request(r, found)).collect()
}

/// The found resource with the request's recorded id, else the one carrying its address tag.
pub(crate) fn match_request(request: &ReadRequest, found: &[Live]) -> Option<Live> {
    request
        .id
        .as_ref()
        .and_then(|id| found.iter().find(|l| &l.id == id))
        .or_else(|| found.iter().find(|l| address_tag(l) == Some(request.address.as_str())))
        .cloned()
}

/// Ids recorded in state that `found` does not contain (to be looked up by id).
pub(crate) fn missing_ids(requests: &[ReadRequest], found: &[Live]) -> Vec<String> {
    requests
        .iter()
        .filter_map(|r| r.id.clone())
        .filter(|id| !found.iter().any(|l| &l.id == id))
        .collect()
}

/// A string attribute of desired attributes.
pub(crate) fn str_attr<'a>(attrs: &'a Attrs, name: &str) -> Result<&'a str, engine::KindError> {
    attrs.get(name).and_then(Json::as_str).ok_or_else(|| {
        engine::KindError::new(format!("attribute `{name}` is missing or not a string"))
    })
}

/// A boolean attribute of desired attributes (false when absent).
pub(crate) fn bool_attr(attrs: &Attrs, name: &str) -> bool {
    attrs.get(name).and_then(Json::as_bool).unwrap_or(false)
}

/// A list attribute as strings (empty when absent).
pub(crate) fn strings_attr(attrs: &Attrs, name: &str) -> Vec<String> {
    attrs
        .get(name)
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(Json::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// A resource read again after an update: it must still be there.
pub(crate) fn still_there(what: &str, found: Option<Live>) -> Result<Live, engine::KindError> {
    found.ok_or_else(|| engine::KindError::new(format!("{what} vanished")))
}

/// Builds a `Live` from an id and attribute pairs.
pub(crate) fn live(
    id: impl Into<String>,
    attrs: impl IntoIterator<Item = (&'static str, Json)>,
) -> Live {
    Live { id: id.into(), attributes: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
}

/// The EC2 filter selecting everything this spec owns.
pub(crate) fn owned_filter(ctx: &engine::Context) -> aws_sdk_ec2::types::Filter {
    aws_sdk_ec2::types::Filter::builder()
        .name(format!("tag:{}", engine::TAG_SPEC))
        .values(ctx.spec_name())
        .build()
}

/// An EC2 filter `name` = any of `values`.
pub(crate) fn filter(name: &str, values: Vec<String>) -> aws_sdk_ec2::types::Filter {
    aws_sdk_ec2::types::Filter::builder().name(name).set_values(Some(values)).build()
}

/// The batched read of an EC2 kind: one `Describe*` for everything the spec owns, and one more
/// by `id_filter` for recorded ids not found that way (e.g. their tags were removed).
pub(crate) async fn read_owned_then_ids<F, Fut>(
    ctx: &engine::Context,
    requests: &[ReadRequest],
    id_filter: &str,
    describe: F,
) -> Result<Vec<Option<Live>>, engine::KindError>
where
    F: Fn(aws_sdk_ec2::types::Filter) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Live>, engine::KindError>>,
{
    let mut found: Vec<Live> = owned(ctx, id_filter, &describe).await?.as_ref().clone();
    let missing = missing_ids(requests, &found);
    if !missing.is_empty() {
        found.extend(describe(filter(id_filter, missing)).await?);
    }
    Ok(match_requests(requests, &found))
}

/// Everything of one EC2 kind the spec owns, read once per refresh (kinds read in several waves,
/// and kinds that share a describe call, reuse it).
pub(crate) async fn owned<F, Fut>(
    ctx: &engine::Context,
    id_filter: &str,
    describe: &F,
) -> Result<std::sync::Arc<Vec<Live>>, engine::KindError>
where
    F: Fn(aws_sdk_ec2::types::Filter) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Live>, engine::KindError>>,
{
    ctx.memo(&format!("ec2:owned:{id_filter}"), || describe(owned_filter(ctx))).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Address;
    use serde_json::json;

    #[test]
    fn matches_by_id_then_by_address_tag() {
        let found = vec![
            live("vpc-1", [("tags", json!({"engine:address": "a"}))]),
            live("vpc-2", [("tags", json!({"engine:address": "b"}))]),
        ];
        let req = |a: &str, id: Option<&str>| ReadRequest {
            address: Address::new(a),
            id: id.map(str::to_string),
            desired: None,
            unknown: vec![],
        };
        let requests = [req("a", Some("vpc-2")), req("b", None), req("c", Some("vpc-9"))];
        let m = match_requests(&requests, &found);
        assert_eq!(m[0].as_ref().unwrap().id, "vpc-2");
        assert_eq!(m[1].as_ref().unwrap().id, "vpc-2");
        assert!(m[2].is_none());
        assert_eq!(missing_ids(&requests, &found), ["vpc-9"]);
    }
}
