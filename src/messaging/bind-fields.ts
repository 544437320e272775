/**
 * SMPP bind fields are C-Octet strings written onto the wire as given: a NUL ends the field early
 * and shifts every field after it, and other control characters reach the SMSC's logs and parsers.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export interface BindFields {
  systemId: string;
  password: string;
  systemType?: string | undefined;
}

/** The bind fields holding a control character, by name (empty when all are clean). */
export function bindFieldProblems(f: BindFields): Array<'systemId' | 'password' | 'systemType'> {
  const out: Array<'systemId' | 'password' | 'systemType'> = [];
  if (CONTROL.test(f.systemId)) out.push('systemId');
  if (CONTROL.test(f.password)) out.push('password');
  if (f.systemType !== undefined && CONTROL.test(f.systemType)) out.push('systemType');
  return out;
}
