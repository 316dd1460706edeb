// A real OpenID Connect provider (oidc-provider, pinned in package-lock.json)
// on 127.0.0.1 for the console's sign-in test
// (tests/integration/test_console_oidc.c, tests/browser/oidc.mjs). Its
// login page takes any password; the user names below are its accounts,
// each with the groups the console reads roles from:
//   viewer    no groups claim at all (a viewer, never more)
//   auditor   sluice-auditor
//   approver  sluice-approver:eng (team eng's approvals, not ops's)
//   admin     sluice-admin
// Environment: OIDC_PORT (the port to listen on), OIDC_REDIRECT_URI (the
// console's callback), OIDC_CLIENT_SECRET. Prints "ready <issuer>" once
// listening; stops on SIGTERM.
import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const groups = {
  viewer: undefined,
  auditor: ['sluice-auditor'],
  approver: ['sluice-approver:eng'],
  admin: ['sluice-admin']
};

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'sluice-console',
    client_secret: process.env.OIDC_CLIENT_SECRET,
    redirect_uris: [process.env.OIDC_REDIRECT_URI],
    post_logout_redirect_uris: [process.env.OIDC_REDIRECT_URI.replace(/\/login\/callback$/, '/')],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: 'RS256'
  }],
  // Claims of the scopes asked go into the id_token itself.
  conformIdTokenClaims: false,
  claims: { openid: ['sub'], email: ['email'], profile: ['name', 'groups'] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  async findAccount (ctx, id) {
    return {
      accountId: id,
      async claims () {
        const claims = { sub: id, email: `${id}@example.com`, name: `${id[0].toUpperCase()}${id.slice(1)} Example` };
        if (groups[id]) claims.groups = groups[id];
        return claims;
      }
    };
  }
});
provider.proxy = false;
const server = provider.listen(port, '127.0.0.1', () => console.log('ready ' + issuer));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
