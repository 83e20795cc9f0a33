/**
 * Near misses of the gateway's variable names, whatever their prefix (src/config/unknown.ts):
 * each is named once with the known name nearest by edit distance, while the variables a real
 * shell, CI runner, container or Windows session sets are never named.
 */
import { describe, expect, it } from 'vitest';
import { editDistance, nearestName, unknownVariableWarnings } from '../../src/config/unknown.js';
import { OTHER_PROGRAMS_VARIABLES, VARIABLES } from '../../src/config/variables.js';

const warning = (name: string, meant: string) =>
  `unknown configuration variable ${name} is ignored; did you mean ${meant}?`;

describe('a near miss of a known name', () => {
  it.each([
    ['API_KEY_FILE', 'API_KEYS_FILE'],
    ['LOG_LEVLE', 'LOG_LEVEL'],
    ['DATA_DIRR', 'DATA_DIR'],
    ['HOT_CACHE_MAX_BYTE', 'HOT_CACHE_MAX_BYTES'],
    ['TRUST_PROXI', 'TRUST_PROXY'],
    ['ANONYMOUS_REQUEST_PER_MINUTE', 'ANONYMOUS_REQUESTS_PER_MINUTE'],
  ])('%s is named once, with %s', (name, meant) => {
    const warnings = unknownVariableWarnings({ [name]: '1', PATH: '/usr/bin', HOME: '/root' }, 'linux');
    expect(warnings).toEqual([warning(name, meant)]);
  });

  it('names each of several once, in a stable order, beside variables that are right', () => {
    const warnings = unknownVariableWarnings(
      { TRUST_PROXI: 'true', LOG_LEVEL: 'info', API_KEY_FILE: '/k.json', PORT: '3000', DATA_DIRR: '/d' },
      'linux',
    );
    expect(warnings).toEqual([
      warning('API_KEY_FILE', 'API_KEYS_FILE'),
      warning('DATA_DIRR', 'DATA_DIR'),
      warning('TRUST_PROXI', 'TRUST_PROXY'),
    ]);
  });

  it('is found whatever its case; on Windows, where case does not matter, a case variant is the variable itself', () => {
    expect(unknownVariableWarnings({ log_level: 'debug', Api_Keys_File: 'k' }, 'linux')).toEqual([
      warning('Api_Keys_File', 'API_KEYS_FILE'),
      warning('log_level', 'LOG_LEVEL'),
    ]);
    expect(unknownVariableWarnings({ log_level: 'debug', Port: '80' }, 'win32')).toEqual([]);
    // A real misspelling is one on Windows too.
    expect(unknownVariableWarnings({ log_levle: 'debug' }, 'win32')).toEqual([
      warning('log_levle', 'LOG_LEVEL'),
    ]);
  });

  it('allows one edit per four characters of the shorter name, and two at most', () => {
    // Four to seven characters: one edit.
    expect(unknownVariableWarnings({ PROT: '1' }, 'linux')).toEqual([warning('PROT', 'PORT')]);
    expect(unknownVariableWarnings({ HSOT: '1' }, 'linux')).toEqual([warning('HSOT', 'HOST')]);
    expect(unknownVariableWarnings({ HOME: '1', PWD: '1', TERM: '1' }, 'linux')).toEqual([]);
    // Eight or more: two edits, not three.
    expect(unknownVariableWarnings({ DATA_DRR: '1' }, 'linux')).toEqual([warning('DATA_DRR', 'DATA_DIR')]);
    expect(unknownVariableWarnings({ LOG_LVL: '1' }, 'linux')).toEqual([]);
    expect(unknownVariableWarnings({ UPSTREAMS_FILE_PATH: '1' }, 'linux')).toEqual([]);
  });

  it('still names an unknown name with one of our prefixes however far it is from any', () => {
    expect(unknownVariableWarnings({ CACHE_SOMETHING_ELSE_ENTIRELY: '1' }, 'linux')).toHaveLength(1);
  });
});

describe('variables that are not the gateway’s', () => {
  /** A Linux login shell in a terminal, running npm. */
  const shell = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: '/home/ops',
    HOSTNAME: 'gw-1',
    PWD: '/opt/clarity-cache',
    OLDPWD: '/home/ops',
    SHLVL: '2',
    TERM: 'xterm-256color',
    COLORTERM: 'truecolor',
    LANG: 'en_US.UTF-8',
    LANGUAGE: 'en_US:en',
    LC_ALL: 'en_US.UTF-8',
    LC_CTYPE: 'en_US.UTF-8',
    USER: 'ops',
    LOGNAME: 'ops',
    SHELL: '/bin/bash',
    MAIL: '/var/mail/ops',
    TMPDIR: '/tmp',
    TZ: 'UTC',
    EDITOR: 'vim',
    VISUAL: 'vim',
    PAGER: 'less',
    LESS: '-R',
    DISPLAY: ':0',
    COLOR: '1',
    COLUMNS: '120',
    LINES: '40',
    PS1: '\\u@\\h:\\w\\$ ',
    _: '/usr/bin/npm',
    SSH_AUTH_SOCK: '/tmp/ssh-agent.sock',
    SSH_CLIENT: '10.0.0.1 50000 22',
    SSH_CONNECTION: '10.0.0.1 50000 10.0.0.2 22',
    SSH_TTY: '/dev/pts/0',
    XDG_RUNTIME_DIR: '/run/user/1000',
    XDG_DATA_DIRS: '/usr/share',
    XDG_CONFIG_DIRS: '/etc/xdg',
    XDG_SESSION_ID: '3',
    LS_COLORS: 'di=01;34',
    HISTSIZE: '1000',
    DEBIAN_FRONTEND: 'noninteractive',
    LD_LIBRARY_PATH: '/usr/local/lib',
    JAVA_HOME: '/usr/lib/jvm/default',
    GOPATH: '/home/ops/go',
    NVM_DIR: '/home/ops/.nvm',
    NVM_BIN: '/home/ops/.nvm/versions/node/v20/bin',
    HTTP_PROXY: 'http://proxy:3128',
    HTTPS_PROXY: 'http://proxy:3128',
    NO_PROXY: 'localhost,127.0.0.1',
    http_proxy: 'http://proxy:3128',
    https_proxy: 'http://proxy:3128',
    no_proxy: 'localhost',
    all_proxy: 'socks5://proxy:1080',
    FORCE_COLOR: '1',
    NO_COLOR: '1',
    NODE_ENV: 'production',
    NODE_OPTIONS: '--max-old-space-size=512',
    NODE_EXTRA_CA_CERTS: '/etc/ssl/ca.pem',
    INIT_CWD: '/opt/clarity-cache',
    npm_lifecycle_event: 'start',
    npm_package_name: 'clarity-cache',
    npm_package_version: '1.0.0',
    npm_config_cache: '/home/ops/.npm',
    npm_config_user_agent: 'npm/10 node/v20',
    npm_node_execpath: '/usr/bin/node',
    npm_execpath: '/usr/lib/node_modules/npm/bin/npm-cli.js',
  };

  /** A GitHub Actions runner. */
  const ci = {
    CI: 'true',
    GITHUB_ACTIONS: 'true',
    GITHUB_TOKEN: 'ghs_x',
    GITHUB_SHA: 'abc',
    GITHUB_REF: 'refs/heads/main',
    GITHUB_WORKSPACE: '/home/runner/work',
    GITHUB_ENV: '/home/runner/env',
    GITHUB_OUTPUT: '/home/runner/out',
    GITHUB_RUN_ID: '1',
    RUNNER_OS: 'Linux',
    RUNNER_ARCH: 'X64',
    RUNNER_TEMP: '/home/runner/temp',
    RUNNER_TOOL_CACHE: '/opt/hostedtoolcache',
    ImageOS: 'ubuntu24',
    ImageVersion: '20250101',
    ACTIONS_RUNNER_DEBUG: 'false',
    NODE_AUTH_TOKEN: 'x',
  };

  /** deploy/Dockerfile's base image, and the systemd unit of deploy/. */
  const container = {
    NODE_VERSION: '20.19.0',
    YARN_VERSION: '1.22.22',
    HOSTNAME: 'c0ffee',
    INVOCATION_ID: 'x',
    JOURNAL_STREAM: '8:1234',
    STATE_DIRECTORY: '/var/lib/clarity-cache',
    CACHE_DIRECTORY: '/var/cache/clarity-cache',
    RUNTIME_DIRECTORY: '/run/clarity-cache',
  };

  /** A Windows session. */
  const windows = {
    Path: 'C:\\Windows',
    PATHEXT: '.COM;.EXE',
    TEMP: 'C:\\Temp',
    TMP: 'C:\\Temp',
    OS: 'Windows_NT',
    USERNAME: 'ops',
    USERPROFILE: 'C:\\Users\\ops',
    HOMEDRIVE: 'C:',
    HOMEPATH: '\\Users\\ops',
    COMPUTERNAME: 'GW1',
    APPDATA: 'C:\\Users\\ops\\AppData\\Roaming',
    LOCALAPPDATA: 'C:\\Users\\ops\\AppData\\Local',
    ComSpec: 'C:\\Windows\\system32\\cmd.exe',
    SystemRoot: 'C:\\Windows',
    windir: 'C:\\Windows',
    PUBLIC: 'C:\\Users\\Public',
    PROCESSOR_ARCHITECTURE: 'AMD64',
    NUMBER_OF_PROCESSORS: '8',
  };

  it.each([
    ['a login shell', shell],
    ['a CI runner', ci],
    ['a container or a systemd service', container],
  ])('%s: no warning', (_, env) => {
    expect(unknownVariableWarnings(env, 'linux')).toEqual([]);
  });

  it('a Windows session: no warning', () => {
    expect(unknownVariableWarnings(windows, 'win32')).toEqual([]);
  });

  it('the local chain’s and the command line’s variables, and every declared one: no warning', () => {
    const known = Object.fromEntries(
      [...VARIABLES, ...OTHER_PROGRAMS_VARIABLES].map((v): [string, string] => [v.name, 'x']),
    );
    expect(known).toHaveProperty('DEVNET_PORT');
    expect(known).toHaveProperty('EVENT_OBSERVER_URLS');
    expect(known).toHaveProperty('CLARITY_CACHE_URL');
    expect(unknownVariableWarnings(known, 'linux')).toEqual([]);
  });

  it('keeps short names two edits from PORT and HOST out by the length rule, listed or not', () => {
    // Neither is on any list: a plain "two edits" rule would name both.
    expect(nearestName('HOLE')).toEqual({ name: 'HOST', distance: 2 });
    expect(nearestName('FORK')).toEqual({ name: 'PORT', distance: 2 });
    expect(unknownVariableWarnings({ HOLE: '1', FORK: '1' }, 'linux')).toEqual([]);
  });
});

describe('edit distance', () => {
  it('counts a swap of adjacent characters as one edit (optimal string alignment)', () => {
    expect(editDistance('LOG_LEVLE', 'LOG_LEVEL')).toBe(1);
    expect(editDistance('ab', 'ba')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('abc', '')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
    // Restricted: a substring is never edited twice (CA -> AC -> ABC is not 2).
    expect(editDistance('CA', 'ABC')).toBe(3);
  });
});
