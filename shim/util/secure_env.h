/* secure_env: environment reads for variables that name a file the shim opens, creates or
 * prints. In a program that runs with privileges its user does not have (setuid, setgid,
 * file capabilities: AT_SECURE), such a variable is not read, and one line says so: the user
 * could otherwise make the program truncate, create or echo files it cannot touch itself. */
#ifndef MEMSHIM_SECURE_ENV_H
#define MEMSHIM_SECURE_ENV_H

/* getenv, except NULL (and one line on stderr when the variable is set) in a privileged
 * program. */
const char *secure_env_get(const char *name);
/* 1 when the process runs with AT_SECURE. */
int secure_env_privileged(void);

#endif /* MEMSHIM_SECURE_ENV_H */
