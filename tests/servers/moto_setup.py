#!/usr/bin/env python3
"""Prepares a running moto server for the S3/GCS tests (run with the PATH python3, which has moto
and boto3; Debian's /usr/bin/python3 does not).

  moto_setup.py setup ENDPOINT BUCKET SRC_DIR=KEY_PREFIX ...
      creates BUCKET, uploads each SRC_DIR tree under KEY_PREFIX, creates an IAM user with an
      access key and a role to assume (both allowed everything), and prints one JSON object:
      {"key_id", "secret", "session_key_id", "session_secret", "session_token"}.
      Authentication stays off (moto's default) until `auth on`.
  moto_setup.py upload ENDPOINT BUCKET SRC_DIR=KEY_PREFIX ...
      uploads more trees into an existing BUCKET (authentication must be off).
  moto_setup.py bucket ENDPOINT BUCKET
      creates another BUCKET (authentication must be off).
  moto_setup.py auth on|off ENDPOINT
      switches moto's SigV4/IAM checking on (every request verified) or off.
"""
import json
import os
import sys
import urllib.request

ALLOW_ALL = json.dumps({"Version": "2012-10-17",
                        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})


def client(service, endpoint, **creds):
    import boto3
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=creds.get("key", "testing"),
                        aws_secret_access_key=creds.get("secret", "testing"),
                        aws_session_token=creds.get("token"))


def upload(endpoint, bucket, trees):
    s3 = client("s3", endpoint)
    for spec in trees:
        src, prefix = spec.split("=", 1)
        for root, _, files in os.walk(src):
            for name in files:
                path = os.path.join(root, name)
                rel = os.path.relpath(path, src).replace(os.sep, "/")
                with open(path, "rb") as f:
                    s3.put_object(Bucket=bucket, Key=f"{prefix}/{rel}", Body=f.read(), ACL="public-read")


def setup(endpoint, bucket, trees):
    client("s3", endpoint).create_bucket(Bucket=bucket)
    upload(endpoint, bucket, trees)
    iam = client("iam", endpoint)
    iam.create_user(UserName="lazycube")
    iam.put_user_policy(UserName="lazycube", PolicyName="all", PolicyDocument=ALLOW_ALL)
    key = iam.create_access_key(UserName="lazycube")["AccessKey"]
    trust = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})
    role = iam.create_role(RoleName="lazycube-role", AssumeRolePolicyDocument=trust)["Role"]
    iam.put_role_policy(RoleName="lazycube-role", PolicyName="all", PolicyDocument=ALLOW_ALL)
    sts = client("sts", endpoint, key=key["AccessKeyId"], secret=key["SecretAccessKey"])
    session = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="lazycube-test")["Credentials"]
    print(json.dumps({"key_id": key["AccessKeyId"], "secret": key["SecretAccessKey"],
                      "session_key_id": session["AccessKeyId"],
                      "session_secret": session["SecretAccessKey"],
                      "session_token": session["SessionToken"]}))


def auth(mode, endpoint):
    body = b"0" if mode == "on" else b"inf"
    req = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=body, method="POST",
                                 headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def main(argv):
    if len(argv) >= 4 and argv[1] == "setup":
        setup(argv[2], argv[3], argv[4:])
    elif len(argv) == 4 and argv[1] == "bucket":
        client("s3", argv[2]).create_bucket(Bucket=argv[3])
    elif len(argv) >= 4 and argv[1] == "upload":
        upload(argv[2], argv[3], argv[4:])
    elif len(argv) == 4 and argv[1] == "auth" and argv[2] in ("on", "off"):
        auth(argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
