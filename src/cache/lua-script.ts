/**
 * Transitional re-export: LuaScript lives in src/redis/ now. Only src/upstream/redis-budget.ts
 * still imports it from here, and that file moves to src/redis/budget.ts in a parallel change;
 * delete this file once it has.
 */
export { LuaScript } from '../redis/lua-script.js';
