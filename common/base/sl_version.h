/*  sl_version.h - the one place for version numbers.

    SL_VERSION is the release of the programs; SL_PROTO_VERSION is the wire
    protocol spoken between the processes (proto/PROTOCOL.md). A process
    drops messages whose protocol version it does not speak.
*/
#ifndef SL_VERSION_H
#define SL_VERSION_H

#define SL_VERSION "0.1.0"
#define SL_PROTO_VERSION 1

#endif
