/**
 * A real nginx (Debian's nginx-light) as the load balancer of a test fleet, with the
 * configuration deploy/ ships: started in the foreground with its own prefix and free port,
 * stopped with the test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tmpDir } from '../unit/cache/tmp-dir.js';
import { freePort } from './process.js';

export interface LoadBalancer {
  readonly url: string;
  stop(): Promise<void>;
}

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));

/** The server block that deploy/ ships (deploy/nginx/clarity-cache.conf), as it is. */
const SHIPPED = readFileSync(path.join(import.meta.dirname, '../../deploy/nginx/clarity-cache.conf'), 'utf8');

/**
 * The shipped configuration in front of `backends` (base URLs): its own `upstream` block with
 * the backends in place of the compose file's instances, its `server` block listening on a free
 * loopback port: every location and rule as shipped (reads retried on another instance,
 * broadcasts never).
 */
export async function startNginx(backends: readonly string[]): Promise<LoadBalancer> {
  if (NGINX === undefined) throw new Error('nginx is needed (Debian package nginx-light)');
  const { dir, remove } = tmpDir('nginx');
  for (const sub of ['logs', 'temp']) mkdirSync(path.join(dir, sub));
  const port = await freePort();
  const servers = backends
    .map((b) => `    server ${new URL(b).host} max_fails=1 fail_timeout=2s;`)
    .join('\n');
  const shipped = SHIPPED.replace(
    /(upstream clarity_cache \{\n)(?:\s*server [^\n]*\n)+/,
    `$1${servers}\n`,
  ).replace(/listen 80;/, `listen 127.0.0.1:${port};`);
  if (!shipped.includes(`listen 127.0.0.1:${port};`) || !shipped.includes(servers))
    throw new Error(
      'deploy/nginx/clarity-cache.conf no longer has the upstream and listen lines this harness rewrites',
    );
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/temp/body;
  proxy_temp_path ${dir}/temp/proxy;
  fastcgi_temp_path ${dir}/temp/fastcgi;
  uwsgi_temp_path ${dir}/temp/uwsgi;
  scgi_temp_path ${dir}/temp/scgi;
${shipped}
}
`,
  );
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  // Ready when the port answers (nginx prints nothing on a clean start).
  for (let i = 0; ; i++) {
    try {
      await fetch(`${url}/health`);
      break;
    } catch {
      if (child.exitCode !== null || i > 200) throw new Error(`nginx did not start: ${out}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGQUIT');
      await exited;
      remove();
    },
  };
}
