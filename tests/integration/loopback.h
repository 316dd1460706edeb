/*  loopback.h - a deployment's addresses brought onto loopback, for the
    tests that run a deployment file's exact commands (test_compose.c,
    test_kubernetes.c): every port the file names maps to one free local
    port (the same port always to the same one), host names and wildcard
    binds become 127.0.0.1, the image's paths local ones.
*/
#ifndef LOOPBACK_H
#define LOOPBACK_H

//  The local port standing for a port of the deployment.
int loopback_port (int from);
//  One argument or environment value rewritten for loopback (the
//  caller's to free): prev is the argument before it (a port flag makes
//  this a port), keys_path the image's key directory and keys_dir the
//  local one standing for it (a file in it too). ${VAR:-default} takes
//  its default.
char *loopback_rewrite (const char *arg, const char *prev, const char *keys_path, const char *keys_dir);

#endif
