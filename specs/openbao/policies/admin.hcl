# Platform administrators: everything, including sudo paths.
path "*" {
  capabilities = ["create", "read", "update", "delete", "list", "sudo"]
}
