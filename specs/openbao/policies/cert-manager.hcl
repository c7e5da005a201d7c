# cert-manager issues and signs certificates from the private PKI.
path "pki_private_issuer/issue/ogenki" {
  capabilities = ["create", "update"]
}
path "pki_private_issuer/sign/ogenki" {
  capabilities = ["create", "update"]
}
