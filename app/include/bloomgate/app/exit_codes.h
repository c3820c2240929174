// File: exit_codes.h
//
// Every exit code of the bloomgate binary, by command (README.md lists them for users). Codes shared by
// several commands have one name each here; a command-specific meaning of the same number has its own.
#pragma once

namespace bloomgate::app {

// Every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;  // bad flags or configuration

// run, demo: a runtime failure (the last log line says which), the shutdown deadline's backstop included.
inline constexpr int kExitServiceFailed = 1;
// demo: ended by SIGINT, as the shell's convention has it.
inline constexpr int kExitInterrupted = 130;

// filter.
inline constexpr int kExitMalformedLines = 1;  // the output is complete, but some input lines were skipped
inline constexpr int kExitIoError = 3;  // FilterCommandResult::io_error: stopped early, the output is incomplete

// inspect: the directory (or one partition's filter) could not be read.
inline constexpr int kExitUnreadable = 1;

}  // namespace bloomgate::app
