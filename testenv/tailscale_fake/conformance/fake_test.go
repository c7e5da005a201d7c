// Conformance of the Tailscale API fake (testenv/tailscale_fake/server.py): Tailscale's official
// Go client drives every endpoint the engine uses and checks the shapes it decodes. The fake is
// started by ../run-tests.sh, which sets TAILSCALE_FAKE_ENDPOINT and TAILSCALE_FAKE_API_KEY.
package conformance

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	tailscale "tailscale.com/client/tailscale/v2"
)

func client(t *testing.T, key string) *tailscale.Client {
	t.Helper()
	endpoint := os.Getenv("TAILSCALE_FAKE_ENDPOINT")
	if endpoint == "" {
		t.Fatal("TAILSCALE_FAKE_ENDPOINT is not set: run testenv/tailscale_fake/run-tests.sh")
	}
	base, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return &tailscale.Client{BaseURL: base, APIKey: key}
}

func fake(t *testing.T) *tailscale.Client {
	return client(t, os.Getenv("TAILSCALE_FAKE_API_KEY"))
}

func status(err error) int {
	var apiErr tailscale.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Status
	}
	return 0
}

func TestAWrongKeyIsRefused(t *testing.T) {
	_, err := client(t, "tskey-api-wrong").DNS().Nameservers(context.Background())
	if status(err) != 401 {
		t.Fatalf("want 401, got %v", err)
	}
}

func TestPolicyFileWithETags(t *testing.T) {
	ctx := context.Background()
	policy := fake(t).PolicyFile()
	raw, err := policy.Raw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if raw.ETag == "" || !strings.Contains(raw.HuJSON, "acls") {
		t.Fatalf("raw policy: %+v", raw)
	}
	text := `{
  // CI runners join with tag:ci
  "tagOwners": {"tag:ci": ["autogroup:admin"]},
  "acls": [{"action": "accept", "src": ["tag:ci"], "dst": ["10.0.0.0/16:*"]},],
}`
	if err := policy.Set(ctx, text, raw.ETag); err != nil {
		t.Fatal(err)
	}
	acl, err := policy.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acl.ACLs) != 1 || acl.ACLs[0].Source[0] != "tag:ci" || acl.TagOwners["tag:ci"][0] != "autogroup:admin" {
		t.Fatalf("decoded policy: %+v", acl)
	}
	again, err := policy.Raw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.HuJSON != text || again.ETag == raw.ETag || again.ETag != acl.ETag {
		t.Fatalf("the text as posted, a new ETag: %+v (was %s)", again, raw.ETag)
	}
	// A stale ETag is refused; a policy that does not parse too.
	if err := policy.Set(ctx, text, raw.ETag); status(err) != 412 {
		t.Fatalf("stale ETag: want 412, got %v", err)
	}
	if err := policy.Set(ctx, `{"acls": [{"action": "drop"}]}`, ""); status(err) != 400 {
		t.Fatalf("bad policy: want 400, got %v", err)
	}
	if err := policy.Validate(ctx, tailscale.ACL{ACLs: []tailscale.ACLEntry{{Action: "accept", Source: []string{"*"}, Destination: []string{"*:*"}}}}); err != nil {
		t.Fatal(err)
	}
	set, err := policy.SetAndGet(ctx, tailscale.ACL{ACLs: []tailscale.ACLEntry{{Action: "accept", Source: []string{"*"}, Destination: []string{"*:*"}}}}, again.ETag)
	if err != nil || len(set.ACLs) != 1 || set.ETag == "" {
		t.Fatalf("set and get: %+v %v", set, err)
	}
}

func TestDNS(t *testing.T) {
	ctx := context.Background()
	dns := fake(t).DNS()
	if err := dns.SetNameservers(ctx, []string{"8.8.8.8", "1.1.1.1"}); err != nil {
		t.Fatal(err)
	}
	servers, err := dns.Nameservers(ctx)
	if err != nil || strings.Join(servers, ",") != "8.8.8.8,1.1.1.1" {
		t.Fatalf("nameservers: %v %v", servers, err)
	}
	if err := dns.SetNameservers(ctx, []string{"not an address"}); status(err) != 400 {
		t.Fatalf("want 400, got %v", err)
	}
	if err := dns.SetSearchPaths(ctx, []string{"priv.aws.ogenki.io", "priv.gcp.ogenki.io"}); err != nil {
		t.Fatal(err)
	}
	paths, err := dns.SearchPaths(ctx)
	if err != nil || len(paths) != 2 {
		t.Fatalf("search paths: %v %v", paths, err)
	}
	if err := dns.SetSplitDNS(ctx, tailscale.SplitDNSRequest{"priv.aws.ogenki.io": {"10.0.0.2"}}); err != nil {
		t.Fatal(err)
	}
	merged, err := dns.UpdateSplitDNS(ctx, tailscale.SplitDNSRequest{"priv.gcp.ogenki.io": {"10.10.0.2", "10.10.0.3"}})
	if err != nil || len(merged) != 2 || merged["priv.gcp.ogenki.io"][1] != "10.10.0.3" {
		t.Fatalf("merged split DNS: %v %v", merged, err)
	}
	removed, err := dns.UpdateSplitDNS(ctx, tailscale.SplitDNSRequest{"priv.aws.ogenki.io": nil})
	if err != nil || len(removed) != 1 {
		t.Fatalf("a null removes: %v %v", removed, err)
	}
	split, err := dns.SplitDNS(ctx)
	if err != nil || len(split) != 1 || split["priv.gcp.ogenki.io"][0] != "10.10.0.2" {
		t.Fatalf("split DNS: %v %v", split, err)
	}
	if err := dns.SetPreferences(ctx, tailscale.DNSPreferences{MagicDNS: true}); err != nil {
		t.Fatal(err)
	}
	prefs, err := dns.Preferences(ctx)
	if err != nil || !prefs.MagicDNS {
		t.Fatalf("preferences: %+v %v", prefs, err)
	}
}

func TestAuthKeys(t *testing.T) {
	ctx := context.Background()
	keys := fake(t).Keys()
	var capabilities tailscale.KeyCapabilities
	capabilities.Devices.Create.Reusable = true
	capabilities.Devices.Create.Preauthorized = true
	capabilities.Devices.Create.Tags = []string{"tag:subnet-router"}
	key, err := keys.CreateAuthKey(ctx, tailscale.CreateKeyRequest{Capabilities: capabilities, ExpirySeconds: 86400, Description: "aws-0 subnet router"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key.Key, "tskey-auth-") || key.ID == "" || key.Created.IsZero() {
		t.Fatalf("created key: %+v", key)
	}
	if got := key.Expires.Sub(key.Created); got != 24*time.Hour {
		t.Fatalf("expires after %v", got)
	}
	read, err := keys.Get(ctx, key.ID)
	if err != nil {
		t.Fatal(err)
	}
	if read.Key != "" || !read.Capabilities.Devices.Create.Reusable || read.Description != "aws-0 subnet router" {
		t.Fatalf("a read shows no secret and the rest: %+v", read)
	}
	listed, err := keys.List(ctx, false)
	if err != nil || len(listed) == 0 {
		t.Fatalf("list: %v %v", listed, err)
	}
	if err := keys.Delete(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Get(ctx, key.ID); !tailscale.IsNotFound(err) {
		t.Fatalf("a deleted key is gone: %v", err)
	}
	capabilities.Devices.Create.Tags = []string{"subnet-router"}
	if _, err := keys.CreateAuthKey(ctx, tailscale.CreateKeyRequest{Capabilities: capabilities}); status(err) != 400 {
		t.Fatalf("a tag without tag: is refused, got %v", err)
	}
}
