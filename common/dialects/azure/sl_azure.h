/*  sl_azure.h - the Azure OpenAI module (see sl_dialect.h): an
    upstream-only door to OpenAI's Chat Completions format.

    Its table names the OpenAI module's request operations; what is its
    own is the URL (deployments or the v1 API), the credential (api-key,
    or an Entra ID bearer token) and the stream decoder, which reads
    Azure's content filter annotations around OpenAI's chunks.
*/
#ifndef SL_AZURE_H
#define SL_AZURE_H

#include "common/dialects/sl_dialect.h"

#define SL_AZURE_V1 "v1"                //  api_version of the v1 API (also: none given)

extern const sl_decoder_vt_t sl_azure_decoder;

#endif
