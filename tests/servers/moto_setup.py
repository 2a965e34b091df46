"""Prepares a running moto server for SigV4 tests: an IAM user with an access key, a bucket
with one object, then turns signature checking on. Prints "ACCESS_KEY SECRET_KEY".

    python3 tests/servers/moto_setup.py ENDPOINT BUCKET KEY FILE

Run it with the interpreter that has moto and boto3 (the PATH python3 here).
"""

import sys
import urllib.request

import boto3


def main():
    endpoint, bucket, key, path = sys.argv[1:5]
    common = dict(endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="testing", aws_secret_access_key="testing")
    iam = boto3.client("iam", **common)
    iam.create_user(UserName="lazycube")
    iam.put_user_policy(UserName="lazycube", PolicyName="all",
                        PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
                                       '"Action":"*","Resource":"*"}]}')
    created = iam.create_access_key(UserName="lazycube")["AccessKey"]
    s3 = boto3.client("s3", **common)
    s3.create_bucket(Bucket=bucket)
    with open(path, "rb") as f:
        s3.put_object(Bucket=bucket, Key=key, Body=f.read())
    req = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                 headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req).read()
    print(created["AccessKeyId"], created["SecretAccessKey"])


if __name__ == "__main__":
    main()
