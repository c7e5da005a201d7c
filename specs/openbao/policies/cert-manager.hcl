# cert-manager issues and signs certificates from the private PKI (the reference grants the
# whole mount).
path "pki_private_issuer/*" {
  capabilities = ["create", "read", "update", "delete", "list"]
}
