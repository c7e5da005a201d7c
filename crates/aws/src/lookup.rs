//! Finding the resources a refresh asks for, with as few calls as possible, and deciding which
//! of what is found is ours.
//!
//! A resource is ours when state records its id, or when it carries the request's
//! `engine:address` tag and this state's `engine:lineage` tag (made by a run that died before
//! writing state; see [`engine::ownership`]). A same-named resource that someone else made is
//! never adopted: its create then fails with the cloud's "already exists".
//!
//! Two shapes of read:
//! - batched ([`read_owned_then_ids`]): one filtered `Describe*` for everything the spec owns
//!   (by the `engine:spec` tag), one more by id for recorded resources not found that way, then
//!   matched by id, else by address tag ([`match_requests`]);
//! - one by one, concurrently ([`read_each`], [`read_by_key`]): for kinds looked up by the name
//!   the spec gives them (IAM roles, EKS node groups, SQS queues, ...).

pub(crate) use engine::ownership::address_tag;
use engine::ownership::{adoptable, untagged_but_begun};
use engine::{Attributes, Context, KindError, Live, ReadRequest, TAG_SPEC};
use std::future::Future;
use std::sync::Arc;

/// A resource found by the name the spec gives it counts as ours only when it is recorded in
/// state, is [`adoptable`] by its tags, or is what a create that state records as begun made
/// before it could tag it ([`untagged_but_begun`]).
pub(crate) fn ours_by_name<A: Attributes>(
    request: &ReadRequest<A>,
    found: Option<Live<A>>,
) -> Option<Live<A>> {
    found.filter(|l| request.id.is_some() || found_by_name_is_ours(request, &l.attributes))
}

/// Whether `found`, which state does not record and which has the name the spec gives
/// `request`, is ours: [`adoptable`] by its tags, or [`untagged_but_begun`].
fn found_by_name_is_ours<A: Attributes>(request: &ReadRequest<A>, found: &A) -> bool {
    adoptable(request, found) || untagged_but_begun(request, found)
}

/// A resource without tags, found by the name the spec gives it, is ours only when recorded in
/// state or when it already is what the spec wants (`same`: nothing to take over).
pub(crate) fn ours_by_value<A: Attributes>(
    request: &ReadRequest<A>,
    found: Option<Live<A>>,
    same: impl Fn(&A, &A) -> bool,
) -> Option<Live<A>> {
    found.filter(|l| {
        request.id.is_some() || request.desired.as_ref().is_some_and(|d| same(d, &l.attributes))
    })
}

/// The key a request is about: from the spec (`of`), else the recorded id.
pub(crate) fn wanted<A>(request: &ReadRequest<A>, of: impl Fn(&A) -> String) -> Option<String> {
    request.desired.as_ref().map(of).or_else(|| request.id.clone())
}

/// Reads the requests concurrently, each by the key `key_of` gives it (none: absent).
pub(crate) async fn read_each<A, K, F, Fut>(
    requests: &[ReadRequest<A>],
    key_of: impl Fn(&ReadRequest<A>) -> Option<K>,
    read: F,
) -> Result<Vec<Option<Live<A>>>, KindError>
where
    F: Fn(K) -> Fut,
    Fut: Future<Output = Result<Option<Live<A>>, KindError>>,
{
    futures::future::try_join_all(requests.iter().map(|r| {
        let found = key_of(r).map(&read);
        async move {
            match found {
                Some(f) => engine::bounded(f).await,
                None => Ok(None),
            }
        }
    }))
    .await
}

/// Reads resources the spec names, each by the key `key_of` gives it; what is found counts
/// only as [`ours_by_name`] says.
pub(crate) async fn read_by_key<A, K, F, Fut>(
    requests: &[ReadRequest<A>],
    key_of: impl Fn(&ReadRequest<A>) -> Option<K>,
    read: F,
) -> Result<Vec<Option<Live<A>>>, KindError>
where
    A: Attributes,
    F: Fn(K) -> Fut,
    Fut: Future<Output = Result<Option<Live<A>>, KindError>>,
{
    let found = read_each(requests, key_of, read).await?;
    Ok(requests.iter().zip(found).map(|(r, l)| ours_by_name(r, l)).collect())
}

/// Reads resources the spec names (`name_of`, else the recorded id), one call each; what is
/// found counts only as [`ours_by_name`] says.
pub(crate) async fn read_named<A, F, Fut>(
    requests: &[ReadRequest<A>],
    name_of: impl Fn(&A) -> String,
    read: F,
) -> Result<Vec<Option<Live<A>>>, KindError>
where
    A: Attributes,
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Option<Live<A>>, KindError>>,
{
    read_by_key(requests, |r| wanted(r, &name_of), read).await
}

/// For each request, the found resource with its recorded id, else the one carrying its
/// address tag.
pub(crate) fn match_requests<A: Attributes>(
    requests: &[ReadRequest<A>],
    found: &[Live<A>],
) -> Vec<Option<Live<A>>> {
    requests
        .iter()
        .map(|r| {
            r.id.as_ref()
                .and_then(|id| found.iter().find(|l| &l.id == id))
                .or_else(|| found.iter().find(|l| adoptable(r, &l.attributes)))
                .cloned()
        })
        .collect()
}

/// For each request, the found resource with its recorded id, else the one with the name the
/// spec gives it (`name`) that carries its address tag.
pub(crate) fn match_by_id_or_name<A: Attributes>(
    requests: &[ReadRequest<A>],
    found: &[Live<A>],
    name: impl Fn(&A) -> &str,
) -> Vec<Option<Live<A>>> {
    requests
        .iter()
        .map(|r| {
            let by_id = r.id.as_ref().and_then(|id| found.iter().find(|l| &l.id == id));
            let by_name = || {
                let wanted = name(r.desired.as_ref()?);
                let ours = |l: &&Live<A>| found_by_name_is_ours(r, &l.attributes);
                found.iter().filter(|l| name(&l.attributes) == wanted).find(ours)
            };
            by_id.or_else(by_name).cloned()
        })
        .collect()
}

/// Ids recorded in state that `found` does not contain (to be looked up by id).
pub(crate) fn missing_ids<A>(requests: &[ReadRequest<A>], found: &[Live<A>]) -> Vec<String> {
    requests
        .iter()
        .filter_map(|r| r.id.clone())
        .filter(|id| !found.iter().any(|l| &l.id == id))
        .collect()
}

/// The EC2 filter selecting everything this spec owns.
pub(crate) fn owned_filter(ctx: &Context) -> aws_sdk_ec2::types::Filter {
    filter(&format!("tag:{TAG_SPEC}"), vec![ctx.spec_name().to_string()])
}

/// An EC2 filter `name` = any of `values`.
pub(crate) fn filter(name: &str, values: Vec<String>) -> aws_sdk_ec2::types::Filter {
    aws_sdk_ec2::types::Filter::builder().name(name).set_values(Some(values)).build()
}

/// The batched read of an EC2 kind: one `Describe*` for everything the spec owns, one more by
/// `id_filter` for recorded ids not found that way (e.g. their tags were removed).
pub(crate) async fn read_owned_then_ids<A, F, Fut>(
    ctx: &Context,
    requests: &[ReadRequest<A>],
    id_filter: &str,
    describe: F,
) -> Result<Vec<Option<Live<A>>>, KindError>
where
    A: Attributes,
    F: Fn(aws_sdk_ec2::types::Filter) -> Fut,
    Fut: Future<Output = Result<Vec<Live<A>>, KindError>>,
{
    let mut found: Vec<Live<A>> = owned(ctx, id_filter, &describe).await?.as_ref().clone();
    let missing = missing_ids(requests, &found);
    if !missing.is_empty() {
        found.extend(describe(filter(id_filter, missing)).await?);
    }
    Ok(match_requests(requests, &found))
}

/// Everything of one EC2 kind the spec owns, read once per refresh (kinds read in several
/// waves, and kinds that share a describe call, reuse it). When specs of one run refresh
/// together, one call reads what all of them own ([`Context::run_memo`]) and each keeps its own.
pub(crate) async fn owned<A, F, Fut>(
    ctx: &Context,
    id_filter: &str,
    describe: &F,
) -> Result<Arc<Vec<Live<A>>>, KindError>
where
    A: Attributes,
    F: Fn(aws_sdk_ec2::types::Filter) -> Fut,
    Fut: Future<Output = Result<Vec<Live<A>>, KindError>>,
{
    let specs = ctx.run_specs();
    if specs.len() == 1 {
        return ctx.memo(&format!("ec2:owned:{id_filter}"), || describe(owned_filter(ctx))).await;
    }
    let key = format!("ec2:owned-by-run:{id_filter}");
    let all = ctx.run_memo(&key, || describe(filter(&format!("tag:{TAG_SPEC}"), specs))).await?;
    let spec = ctx.spec_name();
    let mine = all
        .iter()
        .filter(|l| l.attributes.tags().and_then(|t| t.get(TAG_SPEC)).is_some_and(|s| s == spec));
    Ok(Arc::new(mine.cloned().collect()))
}

/// The EC2 resource `id` just written (`what`, e.g. "subnet"), read by its `id_filter` until
/// it is visible.
pub(crate) async fn read_back_id<A, F, Fut>(
    what: &str,
    id_filter: &str,
    id: &str,
    describe: F,
) -> Result<Live<A>, KindError>
where
    F: Fn(aws_sdk_ec2::types::Filter) -> Fut,
    Fut: Future<Output = Result<Vec<Live<A>>, KindError>>,
{
    let by_id = || async { Ok(describe(filter(id_filter, vec![id.into()])).await?.pop()) };
    engine::retry::read_back(&format!("{what} {id}"), by_id).await
}

/// A resource read again after a change: it must still be there.
pub(crate) fn still_there<A>(what: &str, found: Option<Live<A>>) -> Result<Live<A>, KindError> {
    found.ok_or_else(|| KindError::new(format!("{what} vanished")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::{Address, TAG_ADDRESS, TAG_LINEAGE, Tags};
    use serde::{Deserialize, Serialize};

    #[derive(engine::Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
    struct Thing {
        #[attr(replace)]
        name: String,
        #[attr(in_place, tags)]
        tags: Tags,
    }

    fn owned(address: &str, lineage: &str) -> Tags {
        Tags::from([
            (TAG_ADDRESS.to_string(), address.to_string()),
            (TAG_LINEAGE.to_string(), lineage.to_string()),
        ])
    }

    fn thing_of(id: &str, name: &str, address: &str, lineage: &str) -> Live<Thing> {
        Live::new(id, Thing { name: name.into(), tags: owned(address, lineage) })
    }

    fn thing(id: &str, name: &str, address: &str) -> Live<Thing> {
        thing_of(id, name, address, "L1")
    }

    /// A request of the state of lineage `L1`.
    fn req(address: &str, id: Option<&str>, name: Option<&str>) -> ReadRequest<Thing> {
        ReadRequest {
            address: Address::new(address),
            id: id.map(str::to_string),
            desired: name.map(|n| Thing { name: n.into(), tags: owned(address, "L1") }),
            unknown: vec![],
            create_began: false,
        }
    }

    #[test]
    fn matches_by_id_then_by_address_tag() {
        let found = vec![thing("vpc-1", "x", "a"), thing("vpc-2", "y", "b")];
        let requests = [
            req("a", Some("vpc-2"), None),
            req("b", None, Some("y")),
            req("c", Some("vpc-9"), None),
        ];
        let m = match_requests(&requests, &found);
        assert_eq!(m[0].as_ref().unwrap().id, "vpc-2");
        assert_eq!(m[1].as_ref().unwrap().id, "vpc-2");
        assert!(m[2].is_none());
        assert_eq!(missing_ids(&requests, &found), ["vpc-9"]);
    }

    #[test]
    fn same_named_resources_of_others_are_not_ours() {
        let theirs = Some(thing("r-1", "role", "someone-else"));
        assert!(ours_by_name(&req("a", None, Some("role")), theirs.clone()).is_none());
        assert!(ours_by_name(&req("a", Some("r-1"), Some("role")), theirs).is_some());
        let ours = Some(thing("r-1", "role", "a"));
        assert!(ours_by_name(&req("a", None, Some("role")), ours).is_some());
        let by_name = match_by_id_or_name(
            &[req("a", None, Some("x")), req("b", None, Some("x"))],
            &[thing("1", "x", "a")],
            |t| &t.name,
        );
        assert!(by_name[0].is_some() && by_name[1].is_none());
    }

    #[test]
    fn resources_of_another_lineage_are_not_adopted() {
        let other = thing_of("vpc-1", "x", "a", "L2");
        let found = std::slice::from_ref(&other);
        assert!(match_requests(&[req("a", None, Some("x"))], found)[0].is_none());
        assert!(ours_by_name(&req("a", None, Some("x")), Some(other.clone())).is_none());
        // Recorded in state: found by its id whatever its tags say.
        assert!(match_requests(&[req("a", Some("vpc-1"), Some("x"))], &[other])[0].is_some());
    }
}
