/**
 * What deploy/ exposes to the public. The shipped load balancer (deploy/nginx/clarity-cache.conf,
 * run by a real nginx) never passes the admin API or the metrics on, however the path is spelt;
 * everything else still reaches an instance. The compose file has no default admin token (it
 * refuses to start without one), publishes the gateways on the host's loopback only, and never
 * publishes an event observer's port.
 */

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type LoadBalancer, startNginx } from '../support/nginx.js';
import { rawExchange } from '../support/raw-http.js';

const DEPLOY = path.resolve(import.meta.dirname, '../../deploy');

describe('the shipped load balancer', () => {
  let instance: Server;
  const received: string[] = [];
  let lb: LoadBalancer;

  beforeAll(async () => {
    // An instance that would answer anything: whatever reaches it counts as served.
    instance = createServer((req, res) => {
      req.resume();
      if (req.url !== '/health') received.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true,"data":{}}');
    });
    await new Promise<void>((resolve) => instance.listen(0, '127.0.0.1', resolve));
    lb = await startNginx([`http://127.0.0.1:${(instance.address() as AddressInfo).port}`]);
  });

  afterAll(async () => {
    await lb?.stop();
    await new Promise((resolve) => instance?.close(resolve));
  });

  /** One request as written (no client normalises it on the way), and what came back. */
  async function send(target: string, method = 'GET') {
    const before = received.length;
    const res = await rawExchange(
      lb.url,
      `${method} ${target} HTTP/1.1\r\nHost: gateway.example\r\nConnection: close\r\n${method === 'POST' ? 'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}' : '\r\n'}`,
    );
    return { status: res.status, body: res.body, reached: received.slice(before) };
  }

  it.each([
    '/admin/cache/stats',
    '/admin/keys',
    '/admin',
    '/admin/',
    '/metrics',
    '/metrics/',
    '/metrics?name[]=x',
    '/%61dmin/cache/stats',
    '/%61%64%6d%69%6e/keys',
    '/%6detrics',
    '/admin%2Fcache%2Fstats',
    '//admin/cache/stats',
    '/./admin/cache/stats',
    '/v2/../admin/cache/stats',
    '/ADMIN/cache/stats',
    '/Metrics',
    'http://gateway.example/admin/cache/stats',
    'http://gateway.example/%6detrics',
  ])('does not serve %s to the public', async (target) => {
    for (const method of ['GET', 'POST']) {
      const res = await send(target, method);
      expect(res.reached, `${method} ${target}`).toEqual([]);
      expect(res.status, `${method} ${target}`).toBe(404);
      expect(res.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
      expect(res.body.error.id).toMatch(/^err_[0-9a-f]{32}$/);
    }
  });

  it.each([
    '/health',
    '/ready',
    '/contract-calls/abi/SP000000000000000000002Q6VF78/pox-4',
    '/v2/info',
    '/administrators-guide',
    '/v2/contracts/interface/SP000000000000000000002Q6VF78/metrics-contract',
  ])('still passes %s on to an instance', async (target) => {
    const res = await send(target);
    expect(res.status).toBe(200);
    if (target !== '/health') expect(res.reached).toEqual([`GET ${target}`]);
  });
});

describe('the shipped compose file', () => {
  const text = readFileSync(path.join(DEPLOY, 'compose.yaml'), 'utf8');
  const compose = parse(text, { merge: true }) as {
    services: Record<string, { environment?: Record<string, string>; ports?: string[]; build?: unknown }>;
  };
  const services = Object.entries(compose.services);
  const gateways = services.filter(([, s]) => s.build !== undefined);

  it('has no default admin token: compose refuses to start without ADMIN_TOKEN', () => {
    expect(gateways.length).toBeGreaterThanOrEqual(2);
    for (const [name, service] of gateways) {
      // `${VAR:?message}`: unset or empty stops `docker compose up` with the message;
      // `${VAR:-default}` or `${VAR-default}` would start with a token anyone can read here.
      expect(service.environment?.ADMIN_TOKEN, name).toMatch(/^\$\{ADMIN_TOKEN:\?[^}]+\}$/);
    }
    expect(text).not.toMatch(/ADMIN_TOKEN\s*[:-]?-/);
    expect(text).not.toContain('change-me');
  });

  /** Published ports as [host address, host port, container port]. */
  const published = (ports: readonly string[] = []) =>
    ports.map((p) => {
      const parts = String(p).split(':');
      return parts.length === 3 ? parts : ['0.0.0.0', ...(parts.length === 2 ? parts : [parts[0], parts[0]])];
    });

  it('publishes the gateways on the loopback only: their admin API and metrics are for operators', () => {
    for (const [name, service] of gateways) {
      expect(service.ports?.length, name).toBeGreaterThan(0);
      for (const [host] of published(service.ports)) expect(host, name).toBe('127.0.0.1');
    }
    // The public side is the load balancer, and only its port 80 (the shipped server block).
    const open = services.flatMap(([name, s]) =>
      published(s.ports)
        .filter(([host]) => host !== '127.0.0.1')
        .map((p) => `${name} ${p.join(':')}`),
    );
    expect(open).toEqual(['load-balancer 0.0.0.0:8080:80']);
    expect(text).toContain('./nginx/clarity-cache.conf:/etc/nginx/conf.d/default.conf');
  });

  it("never publishes an event observer's port", () => {
    const observerPorts = new Set(['3700', '3701']);
    for (const [, service] of services) {
      const port = service.environment?.EVENT_OBSERVER_PORT;
      if (port !== undefined) observerPorts.add(String(port));
    }
    for (const [name, service] of services) {
      for (const [, , container] of published(service.ports))
        expect(observerPorts.has(container!), name).toBe(false);
    }
  });
});
