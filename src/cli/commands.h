/* commands.h: the `leek` commands (main.c's table) and their shared usage text.
 *
 * Each lk_cmd_* gets argv from its command name on and returns the process's exit status
 * (LK_EXIT_* in util.h, or the profiled program's status for `leek run`). None of them exits.
 */
#ifndef LEEK_COMMANDS_H
#define LEEK_COMMANDS_H

#include <stdio.h>

int lk_cmd_compress(int argc, char *argv[]);
int lk_cmd_dump(int argc, char *argv[]);
int lk_cmd_run(int argc, char *argv[]);
int lk_cmd_report(int argc, char *argv[]);
int lk_cmd_report_frees(int argc, char *argv[]); /* `leek report frees` */
int lk_cmd_report_errors(int argc, char *argv[]); /* `leek report errors` */
int lk_cmd_export(int argc, char *argv[]);
int lk_cmd_diff(int argc, char *argv[]);
int lk_cmd_import(int argc, char *argv[]);
int lk_cmd_watch(int argc, char *argv[]);
int lk_cmd_push(int argc, char *argv[]);
int lk_cmd_top(int argc, char *argv[]);
int lk_cmd_help(int argc, char *argv[]);
int lk_cmd_ctl(int argc, char *argv[]);

/* Prints the usage of one command (or of leek, for NULL) to f; returns status. */
int lk_cmd_usage(FILE *f, const char *command, int status);

/* After a command's options: 0 if argv has operands left from optind on, else LK_EXIT_USAGE after
 * printing "COMMAND: no WHAT given" and the usage. */
int lk_cmd_need_operands(int argc, const char *command, const char *what);

/* At a command's end: status, or LK_EXIT_FILE after printing why if stdout could not be written
 * whole (a full disk, a closed pipe); what names the output ("output", "report"). */
int lk_cmd_end_output(const char *command, const char *what, int status);

/* `--max-memory SIZE`, which every command that reads profiles takes: the limit of the memory
 * budget (budget.h). 0, or LK_EXIT_USAGE after printing why. */
int lk_cmd_max_memory(const char *command, const char *arg);

#endif /* LEEK_COMMANDS_H */
