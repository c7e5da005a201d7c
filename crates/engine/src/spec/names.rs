//! Name rules shared by the spec's sections: DNS names and Kubernetes object names, label keys
//! and values, so every provider checks them alike.

/// One DNS label: 1 to 63 letters, digits and `-`, not starting or ending with `-`.
pub fn dns_label(label: &str) -> bool {
    (1..=63).contains(&label.len())
        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// A DNS name (`cloud.example.org`): at most 253 characters, each label a [`dns_label`].
pub fn dns_name(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(dns_label)
}

/// A Kubernetes DNS-1123 label (namespaces, ...): a lower-case [`dns_label`].
pub fn k8s_label_name(name: &str) -> bool {
    dns_label(name) && !name.chars().any(|c| c.is_ascii_uppercase())
}

/// A Kubernetes DNS-1123 subdomain (service accounts, storage classes, ...): lower-case labels
/// joined by dots, at most 253 characters.
pub fn k8s_subdomain(name: &str) -> bool {
    dns_name(name) && !name.chars().any(|c| c.is_ascii_uppercase())
}

/// A Kubernetes label (or taint) key: an optional DNS-subdomain prefix and `/`, then a name of
/// at most 63 letters, digits, `-`, `_` and `.`, starting and ending alphanumeric.
pub fn k8s_label_key(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(k8s_subdomain) && !name.is_empty() && k8s_label_value(name)
}

/// A Kubernetes label (or taint) value: empty, or at most 63 letters, digits, `-`, `_` and `.`,
/// starting and ending alphanumeric.
pub fn k8s_label_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

/// A key of a ConfigMap or Secret: 1 to 253 letters, digits, `-`, `_` and `.`.
pub fn k8s_data_key(key: &str) -> bool {
    (1..=253).contains(&key.len())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_and_kubernetes_names() {
        assert!(dns_name("cloud.ogenki.io") && dns_name("priv.aws.Example.org"));
        assert!(!dns_name("") && !dns_name("a..b") && !dns_name("bad name.io"));
        assert!(!dns_name("-a.io") && !dns_name(&"a".repeat(64)));
        assert!(k8s_label_name("kube-system") && !k8s_label_name("Kube_System"));
        assert!(k8s_subdomain("ebs-csi-controller-sa") && k8s_subdomain("a.b"));
        assert!(!k8s_subdomain("provider aws") && !k8s_subdomain("GP3"));
        assert!(k8s_label_key("node.cilium.io/agent-not-ready") && k8s_label_key("role"));
        assert!(!k8s_label_key("") && !k8s_label_key("bad key") && !k8s_label_key("a/"));
        assert!(!k8s_label_key("Bad_Prefix/x"));
        assert!(k8s_label_value("") && k8s_label_value("true") && k8s_label_value("a_b.c-d"));
        assert!(!k8s_label_value("system nodes") && !k8s_label_value("-x"));
        assert!(k8s_data_key("githubAppID") && k8s_data_key(".dockerconfigjson"));
        assert!(!k8s_data_key("") && !k8s_data_key("github app"));
    }
}
