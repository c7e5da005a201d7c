# External Secrets Operator reads the kv-v2 mounts.
path "platform/data/*" {
  capabilities = ["read"]
}
path "platform/metadata/*" {
  capabilities = ["read", "list"]
}
path "apps/data/*" {
  capabilities = ["read"]
}
path "apps/metadata/*" {
  capabilities = ["read", "list"]
}
