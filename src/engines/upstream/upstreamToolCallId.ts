import { randomInt } from "node:crypto";

const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/**
 * The id of a tool call the upstream streamed without one: `call_` and 24 random letters and
 * digits, the standard's look (as the local engine's ids). The relay owns its ids rather than
 * borrowing the llama engine's, so it loads without node-llama-cpp's token loop.
 */
export function upstreamToolCallId(): string {
  let id = "call_";
  for (let i = 0; i < 24; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}
