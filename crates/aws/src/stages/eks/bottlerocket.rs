//! Bottlerocket user data: TOML settings, which EKS merges with its own for managed node groups.
//! The engine sets only `settings.kubernetes.max-pods`, and reads it back from a launch
//! template version's user data.

/// The user data that sets the kubelet's pod limit.
pub(crate) fn settings(max_pods: i64) -> String {
    format!("[settings.kubernetes]\nmax-pods = {max_pods}\n")
}

/// `settings.kubernetes.max-pods` of Bottlerocket user data, if it sets it.
pub(crate) fn max_pods(user_data: &str) -> Option<i64> {
    let doc: toml::Table = user_data.parse().ok()?;
    doc.get("settings")?.get("kubernetes")?.get("max-pods")?.as_integer()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_pods_round_trips() {
        let text = settings(110);
        assert_eq!(text, "[settings.kubernetes]\nmax-pods = 110\n");
        assert_eq!(max_pods(&text), Some(110));
    }

    #[test]
    fn other_user_data_has_no_max_pods() {
        assert_eq!(max_pods("#!/bin/bash\necho hi\n"), None);
        assert_eq!(max_pods("[settings.kubernetes]\ncluster-name = \"x\"\n"), None);
        assert_eq!(
            max_pods(
                "[settings.host-containers.admin]\nenabled = true\n[settings.kubernetes]\nmax-pods = 58\n"
            ),
            Some(58)
        );
    }
}
