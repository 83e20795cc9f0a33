/**
 * A real nginx (Debian's nginx-light) as the load balancer of a test fleet: started in the
 * foreground with its own configuration, prefix and free port, stopped with the test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tmpDir } from '../unit/cache/tmp-dir.js';
import { freePort } from './process.js';

export interface LoadBalancer {
  readonly url: string;
  stop(): Promise<void>;
}

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));

/** Round-robin over `backends` (base URLs); reads are retried on another instance, broadcasts never. */
export async function startNginx(backends: readonly string[]): Promise<LoadBalancer> {
  if (NGINX === undefined) throw new Error('nginx is needed (Debian package nginx-light)');
  const { dir, remove } = tmpDir('nginx');
  for (const sub of ['logs', 'temp']) mkdirSync(path.join(dir, sub));
  const port = await freePort();
  const servers = backends
    .map((b) => `    server ${new URL(b).host} max_fails=1 fail_timeout=2s;`)
    .join('\n');
  const proxy = `
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`;
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
  upstream fleet {
${servers}
    keepalive 16;
  }
  server {
    listen 127.0.0.1:${port};
    location /v2/transactions {${proxy}
      proxy_next_upstream off;
    }
    location / {${proxy}
      proxy_next_upstream error timeout http_502 non_idempotent;
      proxy_next_upstream_tries 3;
    }
  }
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
