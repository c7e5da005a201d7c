# The merge gate (merge-gate/merge-gate-secrets) reads its own kv-v2 mount.
path "merge-gate/data/*" {
  capabilities = ["read"]
}
path "merge-gate/metadata/*" {
  capabilities = ["read", "list"]
}
