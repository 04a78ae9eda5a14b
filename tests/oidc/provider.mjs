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
// Test-only: POST /test/sign {"claims": {...}, "forge": false} answers a JWT signed with
// the provider's own RS256 key (or, with "forge": true, with a throwaway key under the
// same `kid`), for the expired, not-yet-valid and forged cases no grant produces.
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import Provider from 'oidc-provider';

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

const scopes = 'mcp mcp:admin openid';

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

const server = http.createServer();
server.listen(port, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [...users.keys()].map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: scopes,
    })),
    scopes: scopes.split(' '),
    jwks: { keys: [rsa.jwk, ec.jwk] },
    cookies: { keys: ['shortlist-test-cookie-key'] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => ({
          scope: scopes,
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
          jwt: { sign: { alg: client.clientId === 'es256-client' ? 'ES256' : 'RS256' } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => ({ groups: users.get(token.clientId) ?? [] }),
  });
  provider.on('server_error', (ctx, err) => console.error('provider.mjs: server_error', err));

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
