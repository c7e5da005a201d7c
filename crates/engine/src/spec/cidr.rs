//! IPv4 ranges in specs: every lane's networks are checked the same way.

use super::{FieldPath, SpecError, SpecSource};
use ipnet::Ipv4Net;

/// `text` at `path` as an IPv4 network; an error (pushed to `errors`) when it does not parse
/// or has host bits set, with the network meant.
pub fn ipv4_network(
    spec: &SpecSource,
    path: &FieldPath,
    text: &str,
    errors: &mut Vec<SpecError>,
) -> Option<Ipv4Net> {
    match text.parse::<Ipv4Net>() {
        Ok(net) if net.trunc() == net => Some(net),
        Ok(net) => {
            errors.push(spec.error(
                path,
                format!("`{text}` has host bits set; did you mean `{}`?", net.trunc()),
            ));
            None
        }
        Err(_) => {
            errors.push(spec.error(path, format!("`{text}` is not an IPv4 CIDR (a.b.c.d/n)")));
            None
        }
    }
}
