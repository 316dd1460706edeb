// validate.mjs - every object of a rendered manifest (kubectl kustomize's
// output) checked against the Kubernetes OpenAPI schemas, without a cluster.
//
//   node tests/kubernetes/validate.mjs FILE...    exit 0 when every object is valid
//   node tests/kubernetes/validate.mjs --self-test
//
// The schemas are kubernetes-models' (pinned in package-lock.json): types,
// required fields, enums and formats of each kind's API version. A kind
// this does not know fails (an object nothing checked is not a pass), as
// does a file with no object. make check-kubernetes runs it on both overlays.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

// apiVersion "group/version" (or "v1", the core group) to the module that
// holds its kinds' models.
function modulePath(apiVersion) {
  return `kubernetes-models/${apiVersion}`;
}

// The problems of one object: [] when it is valid.
async function check(object) {
  if (!object || typeof object !== "object") return ["not an object"];
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== "string" || typeof kind !== "string") return ["no apiVersion or kind"];
  let models;
  try {
    models = await import(modulePath(apiVersion));
  } catch {
    return [`unknown apiVersion ${apiVersion}`];
  }
  const Model = models[kind];
  if (typeof Model !== "function") return [`unknown kind ${kind} in ${apiVersion}`];
  if (!object.metadata || !object.metadata.name) return ["no metadata.name"];
  try {
    new Model(object).validate();
    return [];
  } catch (err) {
    return [String(err.message || err)];
  }
}

// The objects of a multi-document YAML text; a document that does not
// parse is an error, not skipped.
function objects(text, name) {
  const docs = parseAllDocuments(text);
  const out = [];
  for (const doc of docs) {
    if (doc.errors.length) throw new Error(`${name}: ${doc.errors[0].message}`);
    const value = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

async function validateText(text, name) {
  const list = objects(text, name);
  const problems = [];
  if (list.length === 0) problems.push(`${name}: no object`);
  for (const object of list) {
    const where = `${name}: ${object?.kind ?? "?"}/${object?.metadata?.name ?? "?"}`;
    for (const p of await check(object)) problems.push(`${where}: ${p}`);
  }
  return { count: list.length, problems };
}

// The validator finds what it must: a valid Deployment passes, and each
// broken one fails, so a validator that accepts everything cannot pass.
async function selfTest() {
  const good = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ok}
spec:
  selector: {matchLabels: {app: ok}}
  template:
    metadata: {labels: {app: ok}}
    spec:
      containers: [{name: ok, image: x, ports: [{containerPort: 8080}]}]
`;
  const bad = [
    good.replace("containerPort: 8080", "containerPort: http"),      // a type
    good.replace("containers: [{name: ok, ", "containers: [{"),      // a required field
    good.replace("kind: Deployment", "kind: Deploymnet"),            // an unknown kind
    good.replace("apps/v1", "apps/v9"),                              // an unknown version
    "",                                                              // nothing
  ];
  const ok = await validateText(good, "good");
  if (ok.problems.length) throw new Error(`self-test: a valid Deployment failed: ${ok.problems.join("; ")}`);
  for (const [i, text] of bad.entries()) {
    const r = await validateText(text, `bad${i}`);
    if (r.problems.length === 0) throw new Error(`self-test: broken object ${i} passed`);
  }
  console.log(`validate.mjs self-test: 1 valid object passed, ${bad.length} broken ones failed`);
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === "--self-test") return selfTest();
  if (args.length === 0) throw new Error("usage: validate.mjs FILE... | --self-test");
  let failed = false;
  for (const file of args) {
    const { count, problems } = await validateText(readFileSync(file, "utf8"), file);
    for (const p of problems) console.error(p);
    failed ||= problems.length > 0;
    if (!problems.length) console.log(`${file}: ${count} objects valid (Kubernetes OpenAPI schemas)`);
  }
  if (failed) process.exit(1);
}

main().catch((err) => {
  console.error(err.message || err);
  process.exit(1);
});
