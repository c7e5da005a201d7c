# The snapshot job takes raft snapshots.
path "sys/storage/raft/snapshot" {
  capabilities = ["read"]
}
