//! Which resources found in the cloud are ours to take over.
//!
//! A resource recorded in state is found by its id. One that state does not record (made by a
//! run killed before it wrote state) is taken over only when it carries both this request's
//! `engine:address` tag and this state's `engine:lineage` tag: a resource of another
//! deployment, even from a spec of the same name in the same account, is never adopted.
//! Where a cloud cannot tag in the create call itself (S3 buckets on some endpoints), the state
//! records each create before it begins; a resource found by its name without any ownership tag
//! is what such a create made when state still records it as begun ([`untagged_but_begun`]).
//!
//! What the engine makes it owns whole: kinds report what was attached out of band in
//! `foreign_*` attributes whose desired value is empty, so it is drift and apply removes it.
//! [`unwatch_shared`] drops those attributes from the resources `[globals] shared` names.

use crate::spec::{FieldPath, Globals, SpecErrors, SpecSource};
use crate::{
    Address, Attributes, MANAGED_BY, ReadRequest, ResourceSpec, TAG_ADDRESS, TAG_LINEAGE,
    TAG_MANAGED_BY, TAG_SPEC, Tags,
};

/// The ownership tags of `address` in spec `spec` (the core adds the lineage tag when it
/// resolves the desired attributes): every cloud writes them, as tags or as labels.
pub fn tags(spec: &str, address: &Address) -> Tags {
    Tags::from([
        (TAG_MANAGED_BY.to_string(), MANAGED_BY.to_string()),
        (TAG_SPEC.to_string(), spec.to_string()),
        (TAG_ADDRESS.to_string(), address.to_string()),
    ])
}

/// The `engine:address` tag of a resource, if it has one.
pub fn address_tag<A: Attributes>(attrs: &A) -> Option<&str> {
    attrs.tags().and_then(|t| t.get(TAG_ADDRESS)).map(String::as_str)
}

/// The `engine:lineage` tag of a resource, if it has one.
pub fn lineage_tag<A: Attributes>(attrs: &A) -> Option<&str> {
    attrs.tags().and_then(|t| t.get(TAG_LINEAGE)).map(String::as_str)
}

/// Whether `found`, a resource state does not record, was made for `request` by this state:
/// its address and lineage tags are the ones the request's desired tags carry.
pub fn adoptable<A: Attributes>(request: &ReadRequest<A>, found: &A) -> bool {
    let Some(lineage) = request.desired.as_ref().and_then(lineage_tag) else {
        return false;
    };
    address_tag(found) == Some(request.address.as_str()) && lineage_tag(found) == Some(lineage)
}

/// Whether `found`, found by the name the spec gives it, is what a create of `request` that
/// began and never ended made before it could write the ownership tags: it carries none.
pub fn untagged_but_begun<A: Attributes>(request: &ReadRequest<A>, found: &A) -> bool {
    request.create_began && address_tag(found).is_none() && lineage_tag(found).is_none()
}

/// Resources under a prefix of `[globals] shared` are shared with something else (a controller
/// in the cluster adds rules to a security group): what it attaches is not watched, so their
/// `foreign_*` attributes go. An entry that names no resource is an error at its line.
pub(crate) fn unwatch_shared(
    spec: &SpecSource,
    globals: &Globals,
    resources: &mut [ResourceSpec],
) -> Result<(), SpecErrors> {
    let mut errors = Vec::new();
    for (i, prefix) in globals.shared.iter().enumerate() {
        let mut matched = false;
        for r in resources.iter_mut().filter(|r| r.address.matches_prefix(prefix)) {
            matched = true;
            r.attributes.retain(|name, _| !name.starts_with("foreign_"));
        }
        if !matched {
            let path = FieldPath::root("globals").key("shared").index(i);
            errors.push(spec.error(&path, format!("`{prefix}` is no resource of this spec")));
        }
    }
    spec.errors(errors).into_result()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Address, Tags};
    use serde::{Deserialize, Serialize};

    #[derive(crate::Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
    struct Thing {
        #[attr(in_place, tags)]
        tags: Tags,
    }

    fn thing(address: &str, lineage: Option<&str>) -> Thing {
        let mut tags = Tags::from([(TAG_ADDRESS.to_string(), address.to_string())]);
        if let Some(l) = lineage {
            tags.insert(TAG_LINEAGE.to_string(), l.to_string());
        }
        Thing { tags }
    }

    fn request(address: &str, lineage: &str) -> ReadRequest<Thing> {
        ReadRequest {
            address: Address::new(address),
            id: None,
            desired: Some(thing(address, Some(lineage))),
            unknown: vec![],
            create_began: false,
        }
    }

    #[test]
    fn adoption_needs_the_address_and_the_lineage() {
        let r = request("aws.network.vpc.main", "L1");
        assert!(adoptable(&r, &thing("aws.network.vpc.main", Some("L1"))));
        assert!(!adoptable(&r, &thing("aws.network.vpc.main", Some("L2"))), "other deployment");
        assert!(!adoptable(&r, &thing("aws.network.vpc.main", None)), "no lineage");
        assert!(!adoptable(&r, &thing("aws.network.vpc.other", Some("L1"))), "other address");
        let unknown = ReadRequest::<Thing> { desired: None, ..r.clone() };
        assert!(!adoptable(&unknown, &thing("aws.network.vpc.main", Some("L1"))));
    }

    #[test]
    fn an_untagged_find_is_ours_only_when_its_create_began() {
        let r = request("aws.openbao.s3_bucket.snapshots", "L1");
        let bare = Thing { tags: Tags::new() };
        assert!(!untagged_but_begun(&r, &bare), "no create began: someone else's");
        let begun = ReadRequest { create_began: true, ..r };
        assert!(untagged_but_begun(&begun, &bare));
        let theirs = thing("aws.openbao.s3_bucket.snapshots", Some("L2"));
        assert!(!untagged_but_begun(&begun, &theirs), "tagged by another deployment");
        let mut half = Tags::new();
        half.insert(TAG_LINEAGE.to_string(), "L2".to_string());
        assert!(!untagged_but_begun(&begun, &Thing { tags: half }), "another lineage alone");
    }
}
