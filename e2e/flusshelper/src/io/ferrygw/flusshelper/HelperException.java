package io.ferrygw.flusshelper;

/** A failure with a message meant for the one-line error report (exit code 1). */
final class HelperException extends RuntimeException {
    HelperException(String message) {
        super(message);
    }

    HelperException(String message, Throwable cause) {
        super(message, cause);
    }
}
