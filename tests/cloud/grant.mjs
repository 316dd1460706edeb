// google-auth-library's service-account grant, for
// tests/integration/test_cloud.c: the JWT it signs for a key is compared
// with the one sluice signs (common/cloud/sl_gcpkey).
//
//   node grant.mjs KEY.json SCOPE   prints the assertion google-auth-library
//                                   POSTs to the token endpoint (its HTTP
//                                   transport replaced: nothing leaves the
//                                   process)
//   node grant.mjs verify KEY.json JWT
//                                   checks an assertion with the library's
//                                   own verifier (OAuth2Client's
//                                   verifySignedJwtWithCertsAsync: the
//                                   signature with the key's public half,
//                                   iat and exp, at most an hour ahead, the
//                                   issuer the key's client_email, the
//                                   audience its token_uri); prints
//                                   "verified" or "refused: <why>"
import { createPublicKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { JWT, OAuth2Client } from "google-auth-library";

if (process.argv[2] === "verify") {
  const [file, jwt] = process.argv.slice(3);
  const key = JSON.parse(readFileSync(file, "utf8"));
  const pem = createPublicKey(key.private_key).export({ type: "spki", format: "pem" });
  // The key under the name the JWT's header gives it (none: "undefined",
  // as the library looks it up).
  const header = JSON.parse(Buffer.from(jwt.split(".")[0], "base64url").toString("utf8"));
  const certs = { [String(header.kid)]: pem };
  const maxExpiry = 3600 + 60;           // Google's hour, and a minute of clock skew
  try {
    await new OAuth2Client().verifySignedJwtWithCertsAsync(jwt, certs, key.token_uri, [key.client_email], maxExpiry);
    process.stdout.write("verified\n");
  } catch (err) {
    process.stdout.write(`refused: ${err.message.split(":")[0]}\n`);
  }
  process.exit(0);
}

const [file, scope] = process.argv.slice(2);
const key = JSON.parse(readFileSync(file, "utf8"));
const client = new JWT({ email: key.client_email, key: key.private_key, scopes: [scope] });
let assertion = null;
client.transporter = {
  async request(options) {
    assertion = new URLSearchParams(options.data).get("assertion");
    const grant = new URLSearchParams(options.data).get("grant_type");
    if (grant !== "urn:ietf:params:oauth:grant-type:jwt-bearer") throw new Error(`grant_type ${grant}`);
    return { data: { access_token: "ya29.reference", expires_in: 3599, token_type: "Bearer" }, headers: {} };
  },
};
const { token } = await client.getAccessToken();
if (token !== "ya29.reference" || !assertion) throw new Error("the grant was not made");
process.stdout.write(assertion + "\n");
