/** An `added_tokens` entry of the Hugging Face `tokenizer.json` format (the `tokenizers` library serialization). */

export interface AddedToken {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

export function addedToken(id: number, content: string, special = true): AddedToken {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special };
}
