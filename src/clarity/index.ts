/** The Clarity value codec: parse client input, decode hex strictly, serialize, render, check ABIs. */

export {
  type AbiArgument,
  type AbiFunction,
  type AbiFungibleToken,
  type AbiMap,
  type AbiNonFungibleToken,
  type AbiTupleField,
  type AbiType,
  type AbiVariable,
  type ContractAbi,
  checkArguments,
  describeType,
} from './abi.js';
export { bytesToHex, parseHex } from './hex.js';
export { parseClarityValue } from './parse-input.js';
export {
  type ContractAddressInfo,
  type DecodedAddress,
  decodeAddress,
  encodeAddress,
  isValidClarityName,
  isValidContractName,
  isValidFunctionName,
  networkOfAddress,
  networkOfVersion,
  parseContractAddress,
  parsePrincipal,
  principalProblem,
} from './principal.js';
export { type RenderOptions, renderClarityValue } from './render.js';
export { MAX_DEPTH, MAX_NAME_LENGTH, MAX_VALUE_SIZE } from './rules.js';
export { toHex } from './serialize.js';
export { type DecodeOptions, decodeClarityBytes, decodeClarityHex } from './strict-decode.js';
