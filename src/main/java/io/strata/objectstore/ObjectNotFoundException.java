package io.strata.objectstore;

/** A read named a key with no object (S3 404 NoSuchKey; a missing file). */
public class ObjectNotFoundException extends ObjectStoreException {
  private static final long serialVersionUID = 1L;

  public ObjectNotFoundException(String message, Throwable cause) {
    super(message, false, cause);
  }
}
