//! Which resources found in the cloud are ours to take over.
//!
//! A resource recorded in state is found by its id. One that state does not record (made by a
//! run killed before it wrote state) is taken over only when it carries both this request's
//! `engine:address` tag and this state's `engine:lineage` tag: a resource of another
//! deployment, even from a spec of the same name in the same account, is never adopted.

use crate::{Attributes, ReadRequest, TAG_ADDRESS, TAG_LINEAGE};

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
}
