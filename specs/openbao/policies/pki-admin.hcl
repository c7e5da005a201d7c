# Administration of the private PKI: its issuers, roles, certificates and tidying, and the mount.
path "pki_private_issuer/*" {
  capabilities = ["create", "read", "update", "delete", "list", "sudo"]
}
path "sys/mounts/pki_private_issuer" {
  capabilities = ["create", "read", "update", "delete"]
}
path "sys/mounts/pki_private_issuer/tune" {
  capabilities = ["read", "update"]
}
