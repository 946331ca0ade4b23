// The few DynamoDB document-client operations the store adapter uses, behind a narrow interface.
// Why not call `documentClient.send` directly: a typed seam lets tests wrap the real client (e.g. to
// return UnprocessedItems, which dynalite never does) without mocking DynamoDB itself.
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
  type BatchGetCommandInput,
  type BatchGetCommandOutput,
  type BatchWriteCommandInput,
  type BatchWriteCommandOutput,
  type DeleteCommandInput,
  type DeleteCommandOutput,
  type DynamoDBDocumentClient,
  type GetCommandInput,
  type GetCommandOutput,
  type PutCommandInput,
  type PutCommandOutput,
  type QueryCommandInput,
  type QueryCommandOutput,
  type ScanCommandInput,
  type ScanCommandOutput,
  type UpdateCommandInput,
  type UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';

export interface DocumentOperations {
  batchGet(input: BatchGetCommandInput): Promise<BatchGetCommandOutput>;
  batchWrite(input: BatchWriteCommandInput): Promise<BatchWriteCommandOutput>;
  put(input: PutCommandInput): Promise<PutCommandOutput>;
  update(input: UpdateCommandInput): Promise<UpdateCommandOutput>;
  get(input: GetCommandInput): Promise<GetCommandOutput>;
  delete(input: DeleteCommandInput): Promise<DeleteCommandOutput>;
  query(input: QueryCommandInput): Promise<QueryCommandOutput>;
  scan(input: ScanCommandInput): Promise<ScanCommandOutput>;
}

export function documentOperations(documentClient: DynamoDBDocumentClient): DocumentOperations {
  return {
    batchGet: (input) => documentClient.send(new BatchGetCommand(input)),
    batchWrite: (input) => documentClient.send(new BatchWriteCommand(input)),
    put: (input) => documentClient.send(new PutCommand(input)),
    update: (input) => documentClient.send(new UpdateCommand(input)),
    get: (input) => documentClient.send(new GetCommand(input)),
    delete: (input) => documentClient.send(new DeleteCommand(input)),
    query: (input) => documentClient.send(new QueryCommand(input)),
    scan: (input) => documentClient.send(new ScanCommand(input)),
  };
}
