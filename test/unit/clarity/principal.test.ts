import { ClarityType } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import {
  decodeAddress,
  encodeAddress,
  isValidContractName,
  isValidFunctionName,
  networkOfAddress,
  parseContractAddress,
  parsePrincipal,
} from '../../../src/clarity/index.js';
import { catchGatewayError, HASH, S0, SM, SN, SP, SP_ZERO, ST, ST_ZERO } from './helpers.js';

/** Change one character of the checksum-carrying tail. */
function corrupt(address: string): string {
  const last = address.at(-1)!;
  return address.slice(0, -1) + (last === 'A' ? 'B' : 'A');
}

describe('address encoding', () => {
  it('matches the well-known boot addresses', () => {
    expect(encodeAddress(22, '00'.repeat(20))).toBe(SP_ZERO);
    expect(encodeAddress(26, '00'.repeat(20))).toBe(ST_ZERO);
  });

  it('decodes version and hash160', () => {
    expect(decodeAddress(SP)).toEqual({ version: 22, hash160: HASH });
    expect(decodeAddress(SN)).toEqual({ version: 21, hash160: HASH });
  });
});

describe('parseContractAddress', () => {
  it.each([
    [SP, 'mainnet', 22],
    [SM, 'mainnet', 20],
    [ST, 'testnet', 26],
    [SN, 'testnet', 21],
  ])('%s is %s', (address, network, version) => {
    expect(parseContractAddress(address)).toEqual({ address, network, version, hash160: HASH });
  });

  it.each([
    ['a bad checksum', corrupt(SP), /checksum/],
    ['lower case', `S${SP.slice(1).toLowerCase()}`, /canonical/],
    ['an O for a 0', SP_ZERO.replace('0000', '00O0'), /canonical/],
    ['a non-S start', `X${SP.slice(1)}`, /begin with "S"/],
    ['a too short string', 'SP12', /length/],
    ['a too long string', SP + 'A'.repeat(60), /length/],
    ['characters outside c32', `${SP.slice(0, 10)}!${SP.slice(11)}`, /c32check|checksum/],
    ['an empty string', '', /length/],
    ['a version outside the four Stacks networks', S0, /version 0/],
  ])('refuses %s with INVALID_CONTRACT_ADDRESS', (_label, address, message) => {
    const err = catchGatewayError(() => parseContractAddress(address));
    expect(err.code).toBe('INVALID_CONTRACT_ADDRESS');
    expect(err.message).toMatch(message);
    expect(err.details).toEqual({ address, contractAddress: address });
  });

  it('networkOfAddress follows the version and is undefined for invalid or foreign addresses', () => {
    expect(networkOfAddress(SM)).toBe('mainnet');
    expect(networkOfAddress(SN)).toBe('testnet');
    expect(networkOfAddress(S0)).toBeUndefined();
    expect(networkOfAddress(corrupt(ST))).toBeUndefined();
  });
});

describe('names', () => {
  it.each([
    ['a', true],
    ['my-contract_v2', true],
    ['A1', true],
    ['1abc', false],
    ['-abc', false],
    ['has.dot', false],
    ['has space', false],
    ['ok?', false],
    ['', false],
    ['a'.repeat(128), true],
    ['a'.repeat(129), false],
  ])('contract name #%# valid: %s', (name, valid) => {
    expect(isValidContractName(name)).toBe(valid);
  });

  it.each([
    ['get-balance', true],
    ['is-ok?', true],
    ['transfer!', true],
    ['a<=b', true],
    ['x/y*z+w', true],
    ['_private', false],
    ['+', false],
    ['9lives', false],
    ['café', false],
    ['a'.repeat(128), true],
    ['a'.repeat(129), false],
  ])('function name #%# valid: %s', (name, valid) => {
    expect(isValidFunctionName(name)).toBe(valid);
  });
});

describe('parsePrincipal', () => {
  it('parses standard principals of any c32 version, including non-network ones', () => {
    expect(parsePrincipal(SP)).toEqual({ type: ClarityType.PrincipalStandard, value: SP });
    expect(parsePrincipal(S0)).toEqual({ type: ClarityType.PrincipalStandard, value: S0 });
  });

  it('parses contract principals', () => {
    expect(parsePrincipal(`${ST}.my-token`)).toEqual({
      type: ClarityType.PrincipalContract,
      value: `${ST}.my-token`,
    });
  });

  it.each([
    ['a bad checksum', corrupt(SP)],
    ['a bad contract name', `${SP}.1bad`],
    ['an empty contract name', `${SP}.`],
    ['two dots', `${SP}.a.b`],
    ['an empty string', ''],
  ])('refuses %s with VALIDATION_ERROR naming the path', (_label, s) => {
    const err = catchGatewayError(() => parsePrincipal(s, 'senderAddress'));
    expect(err.code).toBe('VALIDATION_ERROR');
    expect(err.message).toMatch(/^senderAddress: /);
  });
});
