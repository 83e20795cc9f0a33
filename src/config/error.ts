/**
 * The one error of configuration loading: main.ts prints its message as the single line that
 * stops start-up. Its own module so that parsers of parts of the configuration (the upstream
 * list, src/config/upstreams.ts) can raise it without importing config/index.ts at run time.
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`invalid configuration: ${variable} ${message}`);
    this.name = 'ConfigError';
  }
}
