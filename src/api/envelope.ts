/** The response envelope every endpoint answers in (docs/api.md). */
import type { ErrorCode, ErrorDetails } from '../errors.js';

export interface ErrorRecord {
  readonly id: string;
  readonly code: ErrorCode;
  readonly message: string;
  readonly details?: ErrorDetails;
}

export function ok<T>(data: T): { success: true; data: T } {
  return { success: true, data };
}

export function fail(error: ErrorRecord): { success: false; error: ErrorRecord } {
  return { success: false, error };
}

/** The success envelope around data that is already JSON text (stored ABIs, rendered results). */
export function okJson(dataJson: string): string {
  return `{"success":true,"data":${dataJson}}`;
}
