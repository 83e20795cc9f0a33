export {
  ChainFollower,
  type ChainFollowerHooks,
  type ChainFollowerOptions,
  type FollowedBlock,
} from './follower.js';
export { createObserverServer, IGNORED_ROUTES, type ObserverServerOptions } from './server.js';
export { type BlockEffects, blockEffects, eventContracts } from './touched.js';
