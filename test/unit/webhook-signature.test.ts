// Webhook signatures (src/modules/webhooks/signature.ts), Standard Webhooks: `v1,` + base64
// HMAC-SHA256 under the secret's key over `{id}.{timestamp}.{body}`, byte for byte the body
// sent. Checked against the specification's published example and its reference library.
// Pure rule: no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { SECRET_PREFIX, newSigningSecret, signatureHeader } from '../../src/modules/webhooks/signature.ts';

// The example in the Standard Webhooks specification's README.
const SPEC_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SPEC_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const SPEC_TIMESTAMP = 1614265330;
const SPEC_BODY = '{"test": 2432232314}';

describe('signatureHeader', () => {
  it('gives the specification’s example signature', () => {
    assert.equal(signatureHeader(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY), 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('agrees with the reference library for new secrets and bodies of any text', () => {
    for (const body of ['{}', '{"type":"sale.created","data":{"amount":49.99}}', '{"name":"Zoë \\u2028 😀"}', 'x'.repeat(100_000)]) {
      const secret = newSigningSecret();
      const at = 1_700_000_000 + body.length;
      assert.equal(signatureHeader(secret, 'evt_1', at, body), new Webhook(secret).sign('evt_1', new Date(at * 1000), body));
    }
  });

  it('signs the id, the timestamp and the body, so changing any one changes the signature', () => {
    const base = signatureHeader(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY);
    assert.notEqual(signatureHeader(SPEC_SECRET, `${SPEC_ID}x`, SPEC_TIMESTAMP, SPEC_BODY), base);
    assert.notEqual(signatureHeader(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP + 1, SPEC_BODY), base);
    assert.notEqual(signatureHeader(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, '{"test":2432232314}'), base, 'the bytes sent, not re-serialised JSON');
    assert.notEqual(signatureHeader(newSigningSecret(), SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY), base);
  });
});

describe('newSigningSecret', () => {
  it('is whsec_ and the base64 of 256 random bits', () => {
    const secrets = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const secret = newSigningSecret();
      assert.ok(secret.startsWith(SECRET_PREFIX), secret);
      const key = secret.slice(SECRET_PREFIX.length);
      assert.match(key, /^[A-Za-z0-9+/]{43}=$/);
      assert.equal(Buffer.from(key, 'base64').length, 32);
      secrets.add(secret);
    }
    assert.equal(secrets.size, 20);
  });
});
