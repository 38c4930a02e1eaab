import type { WalletFamily } from "../../store/wallets.js";

/**
 * The sign-in text of EIP-4361 (Sign-In with Ethereum) and its Solana twin (CAIP-122 /
 * "Sign in with Solana"), which differ only in the account word and the Chain ID value:
 *
 *   {domain} wants you to sign in with your Ethereum account:    (Solana: "... your Solana account:")
 *   {address}
 *
 *   {statement}                                                    (optional, then a blank line)
 *
 *   URI: {uri}
 *   Version: 1
 *   Chain ID: {8453 | 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp}
 *   Nonce: {nonce}
 *   Issued At: {ISO 8601}
 *   Expiration Time / Not Before / Request ID / Resources        (optional, in this order)
 *
 * The parser is strict (fixed order, no stray lines, "\n" only): the signature is checked over
 * the exact bytes received, and every field the server checks comes from those bytes.
 */
export interface SiwxMessage {
  scheme?: string;
  domain: string;
  family: WalletFamily;
  address: string;
  statement?: string;
  uri: string;
  version: string;
  /** The Chain ID line as written. */
  chainId: string;
  nonce: string;
  issuedAt: string;
  expirationTime?: string;
  notBefore?: string;
  requestId?: string;
  resources?: string[];
}

export class SiwxMessageError extends Error {
  override name = "SiwxMessageError";
}

const HEADER = /^(?:([a-zA-Z][a-zA-Z0-9+.-]*):\/\/)?([^\s/?#]+) wants you to sign in with your (Ethereum|Solana) account:$/;
const ACCOUNT_WORD: Record<WalletFamily, string> = { evm: "Ethereum", solana: "Solana" };

const OPTIONAL_FIELDS = [
  ["Expiration Time", "expirationTime"],
  ["Not Before", "notBefore"],
  ["Request ID", "requestId"],
] as const;

export function parseSiwxMessage(text: string): SiwxMessage {
  if (text.length > 4096) throw new SiwxMessageError("message too long");
  if (text.includes("\r")) throw new SiwxMessageError("message lines must end with \\n only");
  const lines = text.split("\n");
  let i = 0;
  const next = () => {
    if (i >= lines.length) throw new SiwxMessageError("message ends early");
    return lines[i++]!;
  };
  const header = HEADER.exec(next());
  if (!header) throw new SiwxMessageError("first line is not '<domain> wants you to sign in with your Ethereum|Solana account:'");
  const family: WalletFamily = header[3] === "Ethereum" ? "evm" : "solana";
  const address = next();
  if (!/^\S+$/.test(address)) throw new SiwxMessageError("second line must be the address");
  if (next() !== "") throw new SiwxMessageError("a blank line must follow the address");
  let statement: string | undefined;
  const afterBlank = next();
  if (afterBlank !== "") {
    statement = afterBlank;
    if (next() !== "") throw new SiwxMessageError("a blank line must follow the statement");
  }
  const field = (name: string): string => {
    const line = next();
    const prefix = `${name}: `;
    if (!line.startsWith(prefix) || line.length === prefix.length) throw new SiwxMessageError(`expected '${name}: ...' at line ${i}`);
    return line.slice(prefix.length);
  };
  const message: SiwxMessage = {
    scheme: header[1],
    domain: header[2]!,
    family,
    address,
    statement,
    uri: field("URI"),
    version: field("Version"),
    chainId: field("Chain ID"),
    nonce: field("Nonce"),
    issuedAt: field("Issued At"),
  };
  for (const [name, key] of OPTIONAL_FIELDS) {
    if (i < lines.length && lines[i]!.startsWith(`${name}: `)) message[key] = field(name);
  }
  if (i < lines.length && lines[i] === "Resources:") {
    i++;
    message.resources = [];
    while (i < lines.length && lines[i]!.startsWith("- ")) message.resources.push(lines[i++]!.slice(2));
  }
  if (i !== lines.length) throw new SiwxMessageError(`unexpected line ${i + 1}: '${lines[i]!.slice(0, 40)}'`);
  return message;
}

/** The text a wallet signs for these fields (the inverse of parseSiwxMessage). */
export function formatSiwxMessage(m: Omit<SiwxMessage, "family"> & { family: WalletFamily }): string {
  const origin = m.scheme ? `${m.scheme}://${m.domain}` : m.domain;
  let text = `${origin} wants you to sign in with your ${ACCOUNT_WORD[m.family]} account:\n${m.address}\n\n`;
  if (m.statement) text += `${m.statement}\n\n`;
  else text += "\n";
  text += `URI: ${m.uri}\nVersion: ${m.version}\nChain ID: ${m.chainId}\nNonce: ${m.nonce}\nIssued At: ${m.issuedAt}`;
  if (m.expirationTime) text += `\nExpiration Time: ${m.expirationTime}`;
  if (m.notBefore) text += `\nNot Before: ${m.notBefore}`;
  if (m.requestId) text += `\nRequest ID: ${m.requestId}`;
  if (m.resources?.length) text += `\nResources:${m.resources.map((r) => `\n- ${r}`).join("")}`;
  return text;
}
