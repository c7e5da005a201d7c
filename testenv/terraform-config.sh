#!/usr/bin/env bash
# Terraform, the tool the engine replaces, for the tests that take over what it built and the
# side-by-side benchmark. Terraform 1.11.4 and the AWS provider 5.100.0 come with this machine
# (not installed here): this finds the provider's filesystem mirror and writes a CLI
# configuration that installs from it, offline, under ~/.cache/engine/terraform/.
# Prints the configuration's path (for TF_CLI_CONFIG_FILE); fails naming what is missing.
set -euo pipefail
command -v terraform >/dev/null || { echo "terraform is not on the PATH" >&2; exit 1; }
dir="${ENGINE_CACHE:-$HOME/.cache/engine}/terraform"
config="$dir/cli.tfrc"
mirror_of() { # the mirror root holding <host>/hashicorp/aws/<version>/<os_arch>/ above the binary
    dirname "$(dirname "$(dirname "$(dirname "$(dirname "$(dirname "$1")")")")")"
}
binary=""
for root in ${ENGINE_TF_PLUGINS:-} /opt/tf-plugins /usr/share/terraform/plugins "$HOME/.terraform.d/plugins"; do
    found="$(ls "$root"/registry.terraform.io/hashicorp/aws/5.100.0/linux_amd64/terraform-provider-aws_* 2>/dev/null | head -1 || true)"
    if [[ -n $found ]]; then binary="$found"; break; fi
done
if [[ -z $binary ]]; then
    binary="$(find / -name 'terraform-provider-aws_v5.100.0*' -not -path '/proc/*' 2>/dev/null | head -1 || true)"
fi
[[ -n $binary ]] || { echo "the AWS provider 5.100.0 mirror is not on this machine" >&2; exit 1; }
mkdir -p "$dir"
cat > "$config" <<TFRC
provider_installation {
  filesystem_mirror {
    path    = "$(mirror_of "$binary")"
    include = ["registry.terraform.io/hashicorp/aws"]
  }
  direct {
    exclude = ["registry.terraform.io/hashicorp/aws"]
  }
}
TFRC
echo "$config"
