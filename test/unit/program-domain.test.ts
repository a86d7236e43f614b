// The host a merchant means by the domain they type (domainOf, src/modules/programs/): a bare
// host, a pasted URL with a scheme, port, path or trailing dot, all give the host; what is not
// a bare host or an http(s) URL is kept as typed, for the domain check to refuse. Pure rule:
// no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { domainOf } from '../../src/modules/programs/program.service.ts';

describe('domainOf: what a merchant typed or pasted', () => {
  it('takes the host from a URL, in lower case, without port, path, query or fragment', () => {
    for (const [typed, host] of [
      ['https://Shop.Example.com/', 'shop.example.com'],
      ['HTTPS://SHOP.EXAMPLE.COM', 'shop.example.com'],
      ['http://shop.example.com:8080/pricing?ref=x#top', 'shop.example.com'],
      ['shop.example.com:8080/', 'shop.example.com'],
      ['shop.example.com/checkout', 'shop.example.com'],
      ['EXAMPLE.org', 'example.org'],
      ['localhost:3000', 'localhost'],
    ]) {
      assert.equal(domainOf(typed!), host, typed);
    }
  });

  it('drops surrounding spaces and the root’s trailing dot', () => {
    assert.equal(domainOf('  shop.example.com/  '), 'shop.example.com');
    assert.equal(domainOf('shop.example.com.'), 'shop.example.com');
    assert.equal(domainOf('https://shop.example.com./'), 'shop.example.com');
  });

  it('gives an internationalised name in its ASCII (punycode) form', () => {
    assert.equal(domainOf('Bücher.example'), 'xn--bcher-kva.example');
  });

  it('keeps, as typed, what is neither a host nor an http(s) URL, so the domain check refuses it', () => {
    assert.equal(domainOf('ftp://files.example.com'), 'ftp://files.example.com');
    assert.equal(domainOf('https://user:pw@example.com'), 'https://user:pw@example.com');
    assert.equal(domainOf('https://user@example.com'), 'https://user@example.com');
    assert.equal(domainOf('https://'), 'https://');
    assert.equal(domainOf('Not A Domain'), 'not a domain');
    assert.equal(domainOf(''), '');
  });

  it('does not parse more than 2,000 characters', () => {
    const long = `${'a'.repeat(1990)}.example.com`;
    assert.equal(domainOf(long), long);
    assert.equal(domainOf(` ${long} `), long);
  });
});
