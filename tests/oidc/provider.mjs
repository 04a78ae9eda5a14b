// A real OpenID provider (the oidc-provider package) on 127.0.0.1 for the team server's
// tests. Every person is a confidential client that gets access tokens by the client
// credentials grant: the token's `sub` is the client id, `groups` comes from --users, and
// the audience is the resource the request names (RFC 8707; --audience by default).
//
//   node provider.mjs --audience http://127.0.0.1:PORT/mcp [--port 0]
//                     [--users 'alice=eng,admins;bob=sales;carol=']
//
// Prints one JSON line on stdout when ready: {"issuer", "rs256_kid", "es256_kid"}.
// Client secrets are "<id>-secret". The client `es256-client` gets ES256-signed tokens,
// every other one RS256. Keys are generated at start, so a restart on the same port is a
// key rotation (new `kid`s under the same issuer).
//
// The client `shortlist-server` may also use the token exchange grant (RFC 8693): it trades
// a person's access token from this provider (`subject_token`) for one with the requested
// `audience`, the same `sub` and `act: {sub: "shortlist-server"}`, signed RS256.
//
// The client `notes-app` (secret `notes-app-secret`) stands for a third-party API's own
// authorization server: the authorization code grant with PKCE and refresh tokens, its
// redirect URI the MCP server's `/oauth/callback` beside --audience. People sign in on the
// development login page with any login (which becomes `sub`) and allow access on its
// consent page. Its access tokens live --notes-ttl seconds (default 20, shorter than the
// 30 s a client renews ahead of expiry, so every use refreshes). Revocation (RFC 7009) at
// /token/revocation; GET /test/revoked lists the refresh tokens revoked so far.
//
// The client `shortlist-web` (secret `shortlist-web-secret`) is the MCP server itself as an
// OpenID client: it signs a person's browser in (authorization code with PKCE, scope
// `openid`, redirect URI the server's /oauth/signin beside --audience) before a consent link
// goes on. It is first-party: people sign in, and are never asked to consent to it.
// With --rotate, refresh tokens of `notes-app` rotate: each use spends the one used.
//
// Test-only: POST /test/sign {"claims": {...}, "forge": false} answers a JWT signed with
// the provider's own RS256 key (or, with "forge": true, with a throwaway key under the
// same `kid`), for the expired, not-yet-valid and forged cases no grant produces.
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import Provider, { errors } from 'oidc-provider';

// stdout carries the one ready line, and the test stops reading it after that: every
// other message (oidc-provider's notices included) goes to stderr.
console.log = console.error;
console.info = console.error;
console.warn = console.error;

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const audience = arg('audience');
if (!audience) {
  console.error('provider.mjs: --audience URL is required');
  process.exit(2);
}
const port = Number(arg('port', '0'));
const users = new Map(
  arg('users', 'alice=eng,admins;bob=sales;carol=')
    .split(';')
    .filter(Boolean)
    .map((u) => {
      const [id, groups = ''] = u.split('=');
      return [id, groups.split(',').filter(Boolean)];
    }),
);
users.set('es256-client', ['eng']);
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const exchangers = new Set(['shortlist-server']);
users.set('shortlist-server', []);

const scopes = 'mcp mcp:admin openid notes offline_access';
const notesTtl = Number(arg('notes-ttl', '20'));
const rotate = process.argv.includes('--rotate');
const callback = new URL('/oauth/callback', audience).href;
const signinCallback = new URL('/oauth/signin', audience).href;
const revoked = [];

function keyPair(type, options, alg) {
  const { privateKey } = crypto.generateKeyPairSync(type, options);
  const jwk = privateKey.export({ format: 'jwk' });
  jwk.kid = `${alg.toLowerCase()}-${crypto.randomBytes(6).toString('hex')}`;
  jwk.alg = alg;
  jwk.use = 'sig';
  return { jwk, privateKey };
}
const rsa = keyPair('rsa', { modulusLength: 2048 }, 'RS256');
const ec = keyPair('ec', { namedCurve: 'P-256' }, 'ES256');

const b64u = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

function signRs256(claims, privateKey, kid) {
  const input = `${b64u({ alg: 'RS256', typ: 'at+jwt', kid })}.${b64u(claims)}`;
  const sig = crypto.sign('sha256', Buffer.from(input), privateKey).toString('base64url');
  return `${input}.${sig}`;
}

// The claims of a JWT signed by one of this provider's keys and not expired, else null.
function verifyOwn(token, issuer) {
  const [h, p, sig] = token.split('.');
  if (!sig) return null;
  try {
    const header = JSON.parse(Buffer.from(h, 'base64url'));
    const claims = JSON.parse(Buffer.from(p, 'base64url'));
    const key = { [rsa.jwk.kid]: rsa, [ec.jwk.kid]: ec }[header.kid];
    if (!key) return null;
    const pub = crypto.createPublicKey(key.privateKey);
    const ok = crypto.verify('sha256', Buffer.from(`${h}.${p}`),
      header.alg === 'ES256' ? { key: pub, dsaEncoding: 'ieee-p1363' } : pub,
      Buffer.from(sig, 'base64url'));
    const now = Math.floor(Date.now() / 1000);
    return ok && claims.iss === issuer && claims.exp > now ? claims : null;
  } catch {
    return null;
  }
}

const server = http.createServer();
server.listen(port, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [...users.keys()].map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: exchangers.has(id) ? ['client_credentials', TOKEN_EXCHANGE] : ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: scopes,
    })).concat([{
      client_id: 'notes-app',
      client_secret: 'notes-app-secret',
      grant_types: ['authorization_code', 'refresh_token'],
      redirect_uris: [callback],
      response_types: ['code'],
      scope: scopes,
    }, {
      client_id: 'shortlist-web',
      client_secret: 'shortlist-web-secret',
      grant_types: ['authorization_code'],
      redirect_uris: [signinCallback],
      response_types: ['code'],
      scope: 'openid',
    }]),
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: rotate,
    // The MCP server's own sign-in is first-party: no consent page for it.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      if (ctx.oidc.client.clientId === 'shortlist-web') {
        const grant = new ctx.oidc.provider.Grant({
          clientId: ctx.oidc.client.clientId,
          accountId: ctx.oidc.session.accountId,
        });
        grant.addOIDCScope('openid');
        await grant.save();
        return grant;
      }
      return undefined;
    },
    findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    scopes: scopes.split(' '),
    jwks: { keys: [rsa.jwk, ec.jwk] },
    cookies: { keys: ['shortlist-test-cookie-key'] },
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // The server's own sign-in asks for an ID token, not for the MCP audience.
        defaultResource: (ctx, client, oneOf) =>
          oneOf ?? (client?.clientId === 'shortlist-web' ? undefined : audience),
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => ({
          scope: scopes,
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: client.clientId === 'notes-app' ? notesTtl : 600,
          jwt: { sign: { alg: client.clientId === 'es256-client' ? 'ES256' : 'RS256' } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => ({
      groups: users.get(token.accountId ?? token.clientId) ?? [],
    }),
  });
  // RFC 8693: verify the subject token with this provider's own keys, then mint.
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const { subject_token: subject, subject_token_type: type, audience: aud, scope } = ctx.oidc.params;
    if (type !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest('unsupported subject_token_type');
    if (!aud) throw new errors.InvalidTarget('audience is required');
    const claims = verifyOwn(subject ?? '', issuer);
    if (!claims) throw new errors.InvalidGrant('subject_token is not a valid access token of this issuer');
    const now = Math.floor(Date.now() / 1000);
    ctx.body = {
      access_token: signRs256({
        iss: issuer, sub: claims.sub, aud, iat: now, exp: now + 300, jti: crypto.randomUUID(),
        scope: scope ?? claims.scope, groups: claims.groups ?? [],
        client_id: ctx.oidc.client.clientId, act: { sub: ctx.oidc.client.clientId },
      }, rsa.privateKey, rsa.jwk.kid),
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: 'Bearer',
      expires_in: 300,
    };
  }, ['subject_token', 'subject_token_type', 'audience', 'scope', 'requested_token_type']);

  provider.on('server_error', (ctx, err) => console.error('provider.mjs: server_error', err));
  provider.on('refresh_token.revoked', (token) => revoked.push(token.accountId));
  provider.on('grant.revoked', (ctx, grantId) => revoked.push(grantId));

  provider.use(async (ctx, next) => {
    if (ctx.method !== 'GET' || ctx.path !== '/test/revoked') return next();
    ctx.body = { revoked };
  });

  provider.use(async (ctx, next) => {
    if (ctx.method !== 'POST' || ctx.path !== '/test/sign') return next();
    const chunks = [];
    for await (const c of ctx.req) chunks.push(c);
    const { claims, forge = false } = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    const key = forge
      ? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
      : rsa.privateKey;
    ctx.type = 'text/plain';
    ctx.body = signRs256({ iss: issuer, ...claims }, key, rsa.jwk.kid);
  });

  server.on('request', provider.callback());
  process.stdout.write(
    `${JSON.stringify({ issuer, rs256_kid: rsa.jwk.kid, es256_kid: ec.jwk.kid })}\n`,
  );
});

// The test that started us may die without stopping us: end with our stdin.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
