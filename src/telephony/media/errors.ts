/** Codes for media-plane failures; callers map them to public errors, never by message text. */
export type MediaErrorCode =
  | 'MEDIA_NO_COMMON_CODEC'
  | 'MEDIA_BAD_SDP'
  | 'MEDIA_NO_PORT'
  | 'MEDIA_SESSION_CLOSED'
  | 'MEDIA_UNSUPPORTED_AUDIO'
  | 'MEDIA_AUDIO_TOO_LARGE'
  | 'MEDIA_TTS_FAILED'
  | 'MEDIA_BAD_LANGUAGE'
  | 'MEDIA_DOWNLOAD_REFUSED'
  | 'MEDIA_DOWNLOAD_FAILED'
  | 'MEDIA_POOL_CLOSED'
  | 'MEDIA_UNSUPPORTED'
  | 'MEDIA_TAP_TIMEOUT';

export class MediaError extends Error {
  readonly code: MediaErrorCode;
  constructor(code: MediaErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MediaError';
    this.code = code;
  }
}
