/**
 * ClarityType's members as plain module constants. In the bundle, `ClarityType.X` from
 * @stacks/transactions is a property getter of esbuild's CommonJS interop namespace, called
 * once per `case` label tested in every `switch (cv.type)`: 1.6 µs of a decode in the
 * profile (bench/results/profile.md). Read once here, they are ordinary property loads.
 */
import { ClarityType } from '@stacks/transactions';

export const CT = {
  Int: ClarityType.Int,
  UInt: ClarityType.UInt,
  Buffer: ClarityType.Buffer,
  BoolTrue: ClarityType.BoolTrue,
  BoolFalse: ClarityType.BoolFalse,
  PrincipalStandard: ClarityType.PrincipalStandard,
  PrincipalContract: ClarityType.PrincipalContract,
  ResponseOk: ClarityType.ResponseOk,
  ResponseErr: ClarityType.ResponseErr,
  OptionalNone: ClarityType.OptionalNone,
  OptionalSome: ClarityType.OptionalSome,
  List: ClarityType.List,
  Tuple: ClarityType.Tuple,
  StringASCII: ClarityType.StringASCII,
  StringUTF8: ClarityType.StringUTF8,
} as const;
