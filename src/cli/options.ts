import { Option, type Command } from "commander";
import { SERVER_SETTINGS, type ServerSettingName } from "../config.js";

/** Adds a server setting as a flag whose help text names its environment variable and default. */
export function addSettingOption(command: Command, name: ServerSettingName): Command {
  const setting = SERVER_SETTINGS[name];
  return command.addOption(new Option(setting.flag, `${setting.description} (env ${setting.env}, default ${setting.default})`));
}

export type SettingFlags = Partial<Record<ServerSettingName, string>>;
