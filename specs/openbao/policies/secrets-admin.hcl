# Administration of the platform's kv-v2 mounts: every secret, its versions and its metadata.
path "platform/*" {
  capabilities = ["create", "read", "update", "patch", "delete", "list"]
}
path "apps/*" {
  capabilities = ["create", "read", "update", "patch", "delete", "list"]
}
path "agents/*" {
  capabilities = ["create", "read", "update", "patch", "delete", "list"]
}
path "merge-gate/*" {
  capabilities = ["create", "read", "update", "patch", "delete", "list"]
}
path "sys/mounts" {
  capabilities = ["read"]
}
