package io.ferrygw.flusshelper;

/** A command line mistake: reported with exit code 2, distinct from runtime failures (exit 1). */
final class UsageException extends RuntimeException {
    UsageException(String message) {
        super(message);
    }
}
