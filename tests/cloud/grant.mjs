// google-auth-library's service-account grant, for
// tests/integration/test_cloud.c: the JWT it signs for a key is compared
// with the one sluice signs (common/cloud/sl_gcpkey).
//
//   node grant.mjs KEY.json SCOPE   prints the assertion google-auth-library
//                                   POSTs to the token endpoint (its HTTP
//                                   transport replaced: nothing leaves the
//                                   process)
import { readFileSync } from "node:fs";
import { JWT } from "google-auth-library";

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
