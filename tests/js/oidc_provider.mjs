// A real OpenID Connect provider for the UI's sign-in tests: panva's `oidc-provider`
// (pinned in package.json), with one confidential client and the users the test names.
//
//   node oidc_provider.mjs '{"client_id": ..., "client_secret": ..., "redirect_uri": ...,
//                            "post_logout_redirect_uri": ..., "users": {"rita": {"role": "reviewer"}}}'
//
// It listens on a free port of localhost (another site than the server's 127.0.0.1, as
// a real provider is) and prints one line of JSON, {"issuer": ...}, once it serves.
// Its own login page (the library's development one) takes any password; a login that
// is not among `users` signs in with no role claim. Consent is given for the client
// (a first-party application), so the flow is: login page, then back to the client.
import http from "node:http";

import Provider from "oidc-provider";

const config = JSON.parse(process.argv[2]);
const users = config.users ?? {};

const server = http.createServer();
await new Promise((resolve) => server.listen(0, "localhost", resolve));
const issuer = `http://localhost:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: config.client_id,
      client_secret: config.client_secret,
      redirect_uris: [config.redirect_uri],
      post_logout_redirect_uris: [config.post_logout_redirect_uri],
      grant_types: ["authorization_code"],
      response_types: ["code"],
    },
  ],
  claims: { openid: ["sub"], profile: ["preferred_username", "name"], holdpoint: ["role"] },
  // The role in the ID token itself, not only at the userinfo endpoint.
  conformIdTokenClaims: false,
  cookies: { keys: ["holdpoint-test-provider-cookie-key"] },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.body = `<!doctype html><html lang="en"><head><title>Sign out</title></head><body>
          <h1>Sign out of the test provider?</h1>${form}
          <button type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
          </body></html>`;
      },
    },
  },
  pkce: { required: () => true },
  async findAccount(ctx, id) {
    const user = users[id];
    return {
      accountId: id,
      async claims() {
        const claims = { sub: id, preferred_username: id, name: id };
        return user?.role === undefined ? claims : { ...claims, role: user.role };
      },
    };
  },
  async loadExistingGrant(ctx) {
    const grantId =
      ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      return ctx.oidc.provider.Grant.find(grantId);
    }
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope("openid profile holdpoint");
    await grant.save();
    return grant;
  },
});

server.on("request", provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
