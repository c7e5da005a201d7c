# The agents' workloads (agent-system/agents-secrets) read their own kv-v2 mount.
path "agents/data/*" {
  capabilities = ["read"]
}
path "agents/metadata/*" {
  capabilities = ["read", "list"]
}
