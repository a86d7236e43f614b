// The helper that starts `tandem serve` children (issue 29, item 18): it must return only a
// server that is its own child. Here another server holds the port first and answers /healthz
// 200, as a server of a test file running beside could: the helper must not take it for its
// child, and must start the child on another port.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.ts';
import { listensOn, startServerProcess } from '../helpers/server-process.ts';

describe('the server-process helper', () => {
  let database: TestDatabase;
  let impostor: Server;
  let impostorPort: number;

  before(async () => {
    database = await createTestDatabase();
    impostor = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"status":"ok","database":"reachable"}');
    });
    await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve));
    impostorPort = (impostor.address() as AddressInfo).port;
  });

  after(async () => {
    await new Promise((resolve) => impostor.close(resolve));
    await database.drop();
  });

  it('tells its own child from another server on the port it picked', async () => {
    assert.equal(listensOn(process.pid, impostorPort), true, 'this process holds the impostor port');
    const server = await startServerProcess({ databaseUrl: database.url, port: impostorPort });
    try {
      assert.notEqual(server.port, impostorPort, 'the child runs on a port of its own');
      assert.equal(listensOn(server.pid, server.port), true);
      const health = await fetch(`${server.url}/healthz`);
      assert.equal(health.status, 200);
    } finally {
      await server.stop();
    }
  });
});
