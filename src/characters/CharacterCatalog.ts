import { getStoredCharacter, listStoredCharacters } from "../store/characters.js";
import type { Db } from "../store/Store.js";
import type { Character } from "./Character.js";

/**
 * Every character this node serves: those of characters.json (read at start-up) and those
 * admins added with the CLI (read from SQLite on each lookup, so an addition or removal
 * takes effect without a restart). A slug defined in the file wins over a stored one.
 */
export class CharacterCatalog {
  private readonly fromFile: Map<string, Character>;

  constructor(
    private readonly db: Db,
    fileCharacters: readonly Character[],
  ) {
    this.fromFile = new Map(fileCharacters.map((c) => [c.slug, c]));
  }

  get(slug: string): Character | undefined {
    return this.fromFile.get(slug) ?? getStoredCharacter(this.db, slug);
  }

  list(): Character[] {
    const stored = listStoredCharacters(this.db).filter((c) => !this.fromFile.has(c.slug));
    return [...this.fromFile.values(), ...stored];
  }
}
