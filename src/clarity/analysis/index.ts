export {
  analyzeContract,
  CONTEXT_READS,
  type ContractAnalysis,
  type ExternalCall,
  type LocalFunction,
  TOP_LEVEL,
} from './contract-analysis.js';
export {
  type ContractSourcePort,
  type Dependencies,
  DependencyAnalyzer,
  type DependencyAnalyzerOptions,
  isBootContract,
} from './dependencies.js';
