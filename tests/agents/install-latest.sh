#!/bin/sh
# install-latest.sh DIR - the newest published version of each coding agent
# that tests/agents/package.json names, installed into DIR (make agents
# AGENTS=latest). npm says which version is the newest (npm view); DIR gets
# a package.json of its own with exactly those versions, and is installed
# anew only when one of them changed. The pins (tests/agents/package.json
# and package-lock.json) and build/agents are never touched. Prints each
# agent's version installed, beside its pin.
set -eu

dir=${1:?usage: install-latest.sh DIR}
pins=$(pwd)/tests/agents/package.json
mkdir -p "$dir"

# The agents' packages, in the pins' order.
names=$(node -e 'for (const n of Object.keys(require(process.argv[1]).dependencies)) console.log(n)' "$pins")

# name@version for each, the newest npm knows.
specs=""
for name in $names; do
    version=$(timeout 120 npm view "$name" version --loglevel=error) || {
        echo "make agents AGENTS=latest: npm could not tell the newest version of $name"; exit 1; }
    specs="$specs $name@$version"
done

# The package.json of DIR: the pins' file with those versions.
wanted=$(node -e '
    const p = require(process.argv[1]);
    p.description = "The newest version of each coding agent (make agents AGENTS=latest).";
    for (const spec of process.argv.slice(2)) {
        const at = spec.lastIndexOf("@");
        p.dependencies[spec.slice(0, at)] = spec.slice(at + 1);
    }
    console.log(JSON.stringify(p, null, 2));' "$pins" $specs)

if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ ! -f "$dir/package.json" ] \
   || [ "$(cat "$dir/package.json")" != "$wanted" ]; then
    echo "installing the newest coding agents into $dir:$specs"
    # No lock: what people installing today get, dependencies included.
    rm -rf "$dir/node_modules" "$dir/package-lock.json"
    printf '%s\n' "$wanted" > "$dir/package.json.new"
    mv "$dir/package.json.new" "$dir/package.json"
    (cd "$dir" && timeout 900 npm install --no-audit --no-fund --loglevel=error) || {
        rm -f "$dir/package.json"; exit 1; }
fi

# What is installed, beside the pin.
for name in $names; do
    node -e '
        const [name, dir, pins] = process.argv.slice(1);
        const got = require(dir + "/node_modules/" + name + "/package.json").version;
        const pinned = require(pins).dependencies[name];
        console.log("agents: latest " + name + " " + got + " (pinned " + pinned + ")");' \
        "$name" "$(cd "$dir" && pwd)" "$pins"
done
